// @ts-check
// A page-style module that reads result fields: two exist, the last two do not. The type-check
// test (tests/js/checkjs.test.js) expects tsc to report exactly the last two lines.
import { load } from '../../../web/lib/index.js';

const tm = await load();
const peak = tm.peakMemory({ model: { preset: 'gpt2' }, microBatch: 1, seqLen: 128 });
export const shown = [peak.peakBytes, peak.breakdown.activations.bytes];
export const wrong = peak.peakByte; // no such field: peakBytes
export const wrongToo = tm.checkpointSize({ model: { params: 1e6 } }).totalByte;
