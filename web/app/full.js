// @ts-check
// The full core, with the memory-snapshot reader. The page starts on a smaller module without
// it; this one is loaded when a snapshot is first opened (tools/build-page.mjs bundles this
// file against dist/trainmem_full.mjs). Unbundled, it is the npm package's module itself.
export { load } from '../lib/index.js';
