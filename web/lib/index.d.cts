// Types of the CommonJS entry (index.cjs: `module.exports = { load, TrainmemError }`).
// Everything is declared once, in index.d.ts; this file re-exports it for `require`.
import type * as esm from './index.js';

export type * from './index.js';
export type TrainmemError = esm.TrainmemError;
export declare const TrainmemError: typeof esm.TrainmemError;
export declare function load(): Promise<esm.Trainmem>;
