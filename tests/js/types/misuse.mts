// A deliberate misuse that must NOT compile (tests/js/types.test.js expects tsc to reject it
// at exactly these places): an unknown optimizer, and a result field that does not exist.
import { load } from 'trainmem';

const tm = await load();
const r = tm.checkpointSize({ model: { params: 7e9 }, optimizer: 'adamx', weightDtype: 'fp16' });
const gb: number = r.totalGigabytes;
export { gb };
