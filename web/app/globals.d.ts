// Names the page's bundler defines (tools/build-page.mjs, esbuild `define`), for the
// type check of web/app (tests/js/checkjs.test.js). Unbundled, the name is undeclared at run
// time and the page asks the core instead (app.js loadPresets).

/** The model and GPU pickers' ids and display names, read from cpp/data at page build time. */
declare const __TRAINMEM_PRESET_INDEX__:
  | {
      models: Array<{ id: string; name: string }>;
      gpus: Array<{ id: string; name: string }>;
    }
  | undefined;
