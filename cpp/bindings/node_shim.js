// Emscripten 3.1.6's ES6 output uses __dirname and require() when it runs in Node; an ES
// module has neither. No top-level await here: bundlers build workers as IIFE by default
// (Vite), which cannot hold one. Node reads nothing from disk (the binary is embedded,
// -sSINGLE_FILE): require() is only reached for a non-embedded file, where Node >= 20.16
// has process.getBuiltinModule and older Node gets a clear error instead of a ReferenceError.
var __tmNode = typeof process === 'object' && !!(process.versions && process.versions.node);
var __dirname = __tmNode
  ? decodeURIComponent(new URL(import.meta.url).pathname.replace(/\/[^/]*$/, ''))
  : '/';
var require =
  __tmNode && typeof process.getBuiltinModule === 'function'
    ? process.getBuiltinModule
    : function (id) {
        throw new Error('trainmem: require("' + id + '") is not available here');
      };
