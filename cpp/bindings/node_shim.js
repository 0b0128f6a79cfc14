// Emscripten 3.1.6's ES6 output uses __dirname and require() when it runs in Node; an ES
// module has neither. Define both from import.meta.url and Node's own module loader.
var __tmNode = typeof process === 'object' && !!(process.versions && process.versions.node);
var __dirname = __tmNode ? new URL('.', import.meta.url).pathname : '/';
var require = __tmNode
  ? process.getBuiltinModule
    ? process.getBuiltinModule
    : (await import(/* @vite-ignore */ 'node:' + 'module')).createRequire(import.meta.url)
  : undefined;
