'use strict';
// CommonJS entry: the core is an ES module, loaded with a dynamic import inside load().
// TrainmemError comes from the same global slot as errors.js, so instanceof agrees.
const SLOT = Symbol.for('trainmem.TrainmemError');
const TrainmemError =
  globalThis[SLOT] ||
  (globalThis[SLOT] = class TrainmemError extends Error {
    constructor(code, field, message, details) {
      super(message);
      this.name = 'TrainmemError';
      this.code = code;
      this.field = field;
      // infeasible placement budgets: the smallest budget that admits a plan
      if (details && details.minimumBudgetBytes !== undefined) {
        this.minimumBudgetBytes = details.minimumBudgetBytes;
      }
    }
  });

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
