// A bad command line: `.code`, the `.flag` at fault (without --) and the request `.field`.
export class UsageError extends Error {
  constructor(code, flag, message, field = '') {
    super(message);
    this.code = code;
    this.flag = flag;
    this.field = field;
  }
}
