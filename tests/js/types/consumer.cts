// A CommonJS consumer of trainmem (`require`), type-checked with `tsc --noEmit`.
import trainmem = require('trainmem');
import type { CheckpointSizeResult } from 'trainmem';

async function main(): Promise<number> {
  const tm = await trainmem.load();
  const r: CheckpointSizeResult = tm.checkpointSize({
    model: { params: 100e6 },
    optimizer: 'sgd',
    weightDtype: 'fp32',
  });
  try {
    tm.checkpointSize({ model: { params: 'abc' as unknown as number }, optimizer: 'adam' });
  } catch (e) {
    if (e instanceof trainmem.TrainmemError) return e.field.length;
  }
  // @ts-expect-error: the CommonJS entry has no default export
  void trainmem.default;
  return r.totalBytes;
}

export = main;
