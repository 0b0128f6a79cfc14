'use strict';
// CommonJS entry: the core is an ES module, loaded with a dynamic import inside load().
// TrainmemError is the class of errors.js itself (require of an ES module: Node 20.19 and
// 22.12 or later), so it is the ES entry's class and instanceof agrees across both entries.
let errors;
try {
  errors = require('./errors.js');
} catch (e) {
  if (e && e.code !== 'ERR_REQUIRE_ESM') throw e;
  throw new Error(
    `require('trainmem') needs Node 20.19, 22.12 or later (this is ${process.version}); ` +
      "older versions can load it with import('trainmem')",
  );
}
const { TrainmemError } = errors;

let loading = null;
function load() {
  if (!loading) {
    loading = import('./index.js').then(
      (m) => m.load(),
      (e) => {
        loading = null;
        throw e;
      },
    );
  }
  return loading;
}

module.exports = { load, TrainmemError };
