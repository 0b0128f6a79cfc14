// @ts-check
// The one error class of trainmem. The ES module entry (index.js), the CommonJS entry
// (index.cjs, which requires this file), the CLI (whose usage error extends it) and the page
// (whose input error extends it) all throw it, so `instanceof TrainmemError` holds everywhere.
/** @import { MessagePart } from './index.js' */

/** An invalid request: `.code` is a stable string, `.field` the dotted input path. */
export class TrainmemError extends Error {
  /**
   * @param {string} code
   * @param {string} field
   * @param {string} message
   * @param {{ minimumBudgetBytes?: number, messages?: MessagePart[] }} [details]
   */
  constructor(code, field, message, details) {
    super(message);
    this.name = 'TrainmemError';
    this.code = code;
    this.field = field;
    // infeasible placement budgets: the smallest budget that admits a plan
    if (details && details.minimumBudgetBytes !== undefined) {
      this.minimumBudgetBytes = details.minimumBudgetBytes;
    }
    // the message as codes of the core's catalog, when it is one of its sentences
    if (details && Array.isArray(details.messages)) this.messages = details.messages;
  }
}
