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

/**
 * A command: the core function it calls, its help, and (compare-snapshot) its own input, run
 * and table.
 * @typedef {{
 *   fn: Exclude<keyof import('../../index.js').Trainmem, 'version'>,
 *   summary: string,
 *   examples: string[],
 *   readInput?: (file: string, max: number) => Buffer,
 *   run?(tm: import('../../index.js').Trainmem, flags: Record<string, unknown>, snapshot?: Buffer): unknown,
 *   flagField?: (field: string) => string,
 *   render?(result: unknown, markdown: boolean): string,
 * }} Command
 */

/** @type {Record<string, Command>} */
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
