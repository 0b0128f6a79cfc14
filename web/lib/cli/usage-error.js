// A bad command line: a TrainmemError whose `.flag` (without --) names the flag at fault.
import { TrainmemError } from '../errors.js';

export class UsageError extends TrainmemError {
  /**
   * @param {string} code
   * @param {string} flag
   * @param {string} message
   * @param {string} [field]
   */
  constructor(code, flag, message, field = '') {
    super(code, field, message);
    this.flag = flag;
  }
}
