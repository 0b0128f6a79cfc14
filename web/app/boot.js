// Page start-up, first script to run (an async module, tiny): starts compiling the core while
// dist/main.js, about 60 KB, is still arriving and being parsed. main.js hands the compiling
// module to load({ module }), which instantiates it; before, compiling began only once main.js
// ran (bench/RESULTS.md, session 4). If this fails (or has not run), load() fetches the core
// itself.
const compiling = WebAssembly.compileStreaming(fetch(new URL('trainmem.wasm', import.meta.url)));
compiling.catch(() => {}); // not an unhandled rejection: main.js falls back
globalThis.trainmemCompiling = compiling;
