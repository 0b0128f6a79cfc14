// TrainmemError: one class whichever way the package was loaded (ES module or CommonJS):
// both entries take it from the same global registry slot (index.cjs has the twin).
const SLOT = Symbol.for('trainmem.TrainmemError');

/** An invalid request: `.code` is a stable string, `.field` the dotted input path. */
export const TrainmemError =
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
