// @ts-check
// The commands of the CLI, one file each: the core function it calls, its help summary and
// examples, and (compare-snapshot) its own way to run and to render.
import checkpointSize from './checkpoint-size.js';
import describeModel from './describe-model.js';
import peakMemory from './peak-memory.js';
import accumulation from './accumulation.js';
import placement from './placement.js';
import compareSnapshot from './compare-snapshot.js';
import presets from './presets.js';
import advise from './advise.js';
import planLayout from './plan-layout.js';

export const COMMANDS = {
  'checkpoint-size': checkpointSize,
  'describe-model': describeModel,
  'peak-memory': peakMemory,
  advise: advise,
  accumulation: accumulation,
  placement: placement,
  'compare-snapshot': compareSnapshot,
  presets: presets,
  'plan-layout': planLayout,
};
export const ALL = Object.keys(COMMANDS);
