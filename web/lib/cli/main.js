// @ts-check
// The CLI's run: parse, call the core once per scenario, print the result or the error.
import { load, TrainmemError } from '../index.js';
import { parseArgs, flagForField } from './args.js';
import { COMMANDS } from './commands/index.js';
import { helpText } from './help.js';
import { renderTable } from './render.js';
import { UsageError } from './usage-error.js';
import { readStdinBounded, setCore, setStdin } from './values.js';

/**
 * Where the CLI writes, and how it reads standard input.
 * @typedef {{
 *   out: (text: string) => unknown,
 *   err: (text: string) => unknown,
 *   stdin: (max: number) => string | null,
 * }} Io
 */

/** @type {Io} */
const processIo = {
  out: (text) => process.stdout.write(text),
  err: (text) => process.stderr.write(text),
  // at most the request limit (+1 byte to tell it is longer): `--json /dev/zero` ends
  stdin: (max) => readStdinBounded(max),
};

/**
 * Runs the CLI on `argv` (without node and the script). Returns the exit code: 0 result on
 * `io.out`; 2 bad input, 1 internal error, each as {"error":{...}} on `io.err`.
 * @param {string[]} argv
 * @param {Io} [io]
 * @returns {Promise<number>}
 */
export async function main(argv, io = processIo) {
  /** @type {(err: object, code?: number) => number} */
  const fail = (err, code = 2) => {
    io.err(`${JSON.stringify({ error: err })}\n`);
    return code;
  };
  try {
    // The core first: user JSON is read by its strict reader, within its request limit.
    const tm = await load();
    const maxBytes = tm.vocabulary().limits.requestBytes;
    setCore({ parseJson: tm.parseJson, maxBytes });
    setStdin(() => io.stdin(maxBytes));
    let args;
    try {
      args = parseArgs(argv);
    } catch (/** @type {any} */ e) {
      if (!(e instanceof UsageError)) throw e;
      return fail({
        code: e.code,
        field: e.field,
        flag: e.flag ? `--${e.flag}` : null,
        message: e.message,
      });
    }
    if (args.help) {
      io.out(helpText(args.command, tm.vocabulary()));
      return 0;
    }
    if (args.version) {
      io.out(`${tm.version}\n`);
      return 0;
    }
    const command = COMMANDS[/** @type {string} */ (args.command)];
    const results = [];
    let input;
    if (command.readInput && args.file !== null) {
      try {
        input = command.readInput(args.file, tm.vocabulary().limits.snapshotBytes);
      } catch (/** @type {any} */ e) {
        if (e instanceof TrainmemError) {
          return fail({ code: e.code, field: 'snapshot', flag: null, message: e.message });
        }
        return fail({ code: 'unreadable_file', field: 'snapshot', flag: null, message: e.message });
      }
    }
    for (const [i, s] of args.scenarios.entries()) {
      try {
        results.push(
          command.run
            ? command.run(tm, s.request, input)
            : /** @type {(request: unknown) => unknown} */ (tm[command.fn])(s.request),
        );
      } catch (/** @type {any} */ e) {
        if (!(e instanceof TrainmemError)) throw e;
        const field = command.flagField ? command.flagField(e.field) : e.field;
        /** @type {{ code: string, field: string, flag: string | null, message: string, scenario?: number }} */
        const err = {
          code: e.code,
          field: e.field,
          flag: e.field === 'snapshot' ? null : flagForField(s.origin, field),
          message: e.message,
        };
        if (args.scenarios.length > 1) err.scenario = i + 1;
        return fail(err, e.code === 'internal' ? 1 : 2);
      }
    }
    const text =
      args.format === 'json'
        ? JSON.stringify(results.length === 1 ? results[0] : results, null, 2)
        : command.render
          ? command.render(results[0], args.format === 'markdown')
          : renderTable(results, args.format === 'markdown');
    io.out(`${text}\n`);
    return 0;
  } catch (/** @type {any} */ e) {
    return fail({ code: 'internal', field: '', flag: null, message: String(e?.stack ?? e) }, 1);
  }
}
