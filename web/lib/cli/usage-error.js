// @ts-check
// A bad command line: a TrainmemError whose `.flag` (without --) names the flag at fault.
import { TrainmemError } from '../errors.js';

/**
 * The codes of command-line errors, with their meaning: the one list of them (the core's own
 * codes, which a file read through it may also give, are its vocabulary's `errorCodes`).
 */
export const USAGE_CODES = Object.freeze({
  missing_command: 'no command named',
  unknown_command: 'not a command',
  unknown_flag: 'not a flag (the closest is suggested)',
  flag_not_for_command: 'a flag of another command',
  missing_value: 'a flag without its value',
  invalid_number: 'a value that is not a number, count or byte size',
  invalid_boolean: 'a value that is not true or false',
  invalid_set: '--set without path=value, or a path that is not a field',
  invalid_vs: '--vs or --json where they cannot go',
  invalid_format: '--format other than json, table, markdown',
  conflicting_flags: 'two flags that describe the same thing',
  repeated_flag: 'a flag (or a --set path) given twice in one scenario',
  unexpected_argument: 'a word that is not a flag or its value',
  file_not_readable: 'a file that cannot be read',
  too_large: 'a file or standard input longer than the request limit',
});

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
