// @ts-check
// Module worker: heavy solves (optimal placement, frontiers) and calls of tens of milliseconds
// (the accumulation planner) run here so the page never freezes. Messages: {id, fn, request} →
// {id, result} | {id, error: {code, field, message, minimumBudgetBytes?, messages?}}; {ready: true} once
// the core is loaded.
/** @import { CoreCall } from './types.js' */
import { load } from '../lib/index.js';
import { FULL_CORE_ONLY, fullCore } from './full-core.js';

const ready = load();
// Tells the page that calls sent here are answered without waiting for the core to load.
ready.then(() => self.postMessage({ ready: true })).catch(() => {});
self.onmessage = async (e) => {
  /** @type {{ id: number, fn: CoreCall, request: object }} (solver.js's message) */
  const { id, fn, request } = e.data;
  try {
    const tm = FULL_CORE_ONLY.has(fn) ? await fullCore() : await ready;
    self.postMessage({ id, result: /** @type {(r: object) => unknown} */ (tm[fn])(request) });
  } catch (/** @type {any} */ err) {
    self.postMessage({
      id,
      error: {
        code: err.code || 'internal',
        field: err.field || '',
        message: String(err.message),
        minimumBudgetBytes: err.minimumBudgetBytes,
        messages: err.messages,
      },
    });
  }
};
