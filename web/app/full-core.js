// @ts-check
// The functions that read a file's bytes (the memory-snapshot reader) are only in the full
// core, which is loaded on their first use (web/app/full.js; tools/build-page.mjs).
export const FULL_CORE_ONLY = new Set(['readSnapshot', 'compareSnapshot']);

/** @type {Promise<import('../lib/index.js').Trainmem> | null} */
let loading = null;

/** Loads the full core once; a failed load is retried at the next call. */
export function fullCore() {
  if (!loading) {
    loading = import('./full.js').then(
      (m) => m.load(),
      (e) => {
        loading = null;
        throw e;
      },
    );
  }
  return loading;
}
