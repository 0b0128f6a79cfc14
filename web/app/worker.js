// @ts-check
// Module worker: heavy solves (optimal placement, frontiers) run here so the page never
// freezes. Messages: {id, fn, request} → {id, result} |
// {id, error: {code, field, message, minimumBudgetBytes?}}.
import { load } from '../lib/index.js';
import { FULL_CORE_ONLY, fullCore } from './full-core.js';

const ready = load();
self.onmessage = async (e) => {
  const { id, fn, request } = e.data;
  try {
    const tm = FULL_CORE_ONLY.has(fn) ? await fullCore() : await ready;
    self.postMessage({ id, result: tm[fn](request) });
  } catch (err) {
    self.postMessage({
      id,
      error: {
        code: err.code || 'internal',
        field: err.field || '',
        message: String(err.message),
        minimumBudgetBytes: err.minimumBudgetBytes,
      },
    });
  }
};
