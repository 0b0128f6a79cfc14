// @ts-check
// Flag values: numbers, counts (6.7B), bytes (80GiB), booleans, and files (or - for stdin).
import { closeSync, openSync, readSync } from 'node:fs';
import { TrainmemError } from '../errors.js';
import * as units from '../units.js';
import { UsageError } from './usage-error.js';

// The grammar of numbers, counts and bytes is units.js's (one copy, shared with the page).
/**
 * @param {string | undefined} text
 * @param {string} flag
 */
export function parseNumber(text, flag) {
  const n = units.parseNumber(text);
  if (Number.isNaN(n)) {
    throw new UsageError('invalid_number', flag, `--${flag} needs a number, got "${text}"`);
  }
  return n;
}
/**
 * @param {string | undefined} text
 * @param {string} flag
 */
export function parseCount(text, flag) {
  if (!units.hasCountSuffix(text)) return parseNumber(text, flag);
  const n = units.parseCount(text);
  if (Number.isNaN(n)) {
    throw new UsageError(
      'invalid_number',
      flag,
      `--${flag} needs a count like 7e9 or 6.7B, got "${text}"`,
    );
  }
  return n;
}
/**
 * @param {string | undefined} text
 * @param {string} flag
 */
export function parseBytes(text, flag) {
  const n = units.parseBytes(text);
  if (Number.isNaN(n)) {
    throw new UsageError(
      'invalid_number',
      flag,
      `--${flag} needs bytes like 80GB, 80GiB or 8e10, got "${text}"`,
    );
  }
  return n;
}
/**
 * @param {string | boolean | undefined} text
 * @param {string} flag
 */
export function parseBoolean(text, flag) {
  if (text === undefined || text === true) return true;
  const t = String(text).toLowerCase();
  if (['true', 'yes', '1', 'on'].includes(t)) return true;
  if (['false', 'no', '0', 'off'].includes(t)) return false;
  throw new UsageError('invalid_boolean', flag, `--${flag} is true or false, got "${text}"`);
}

// The core's strict JSON reader and its size limit (main() sets them from the loaded module):
// the command line reads user JSON exactly as a request is read.
/** @typedef {{ parseJson: (text: string) => unknown, maxBytes: number }} JsonReader */
/** @type {JsonReader} */
let core = {
  parseJson: (text) => JSON.parse(text),
  maxBytes: 16 * 2 ** 20,
};
/**
 * Sets the JSON reader and the request size limit (main() passes the loaded core's).
 * @param {JsonReader} next
 */
export function setCore(next) {
  core = next;
}

/**
 * At most `max` bytes of a file (or of standard input, fd 0): a longer one (or an endless
 * one, such as /dev/zero) is refused after max + 1 bytes, never read whole.
 * @param {string | number} file
 * @param {number} max
 * @returns {Buffer | null} null when longer than max
 */
export function readBounded(file, max) {
  const fd = typeof file === 'number' ? file : openSync(file, 'r');
  /** @type {Buffer[]} */
  const chunks = [];
  let total = 0;
  try {
    const buf = Buffer.allocUnsafe(Math.min(1 << 20, max + 1));
    for (;;) {
      let n;
      try {
        n = readSync(fd, buf, 0, buf.length, null);
      } catch (/** @type {any} */ e) {
        if (e.code !== 'EAGAIN') throw e;
        Atomics.wait(new Int32Array(new SharedArrayBuffer(4)), 0, 0, 5); // stdin not ready yet
        continue;
      }
      if (n === 0) break;
      total += n;
      if (total > max) return null;
      chunks.push(Buffer.from(buf.subarray(0, n)));
    }
  } finally {
    if (typeof file !== 'number') closeSync(fd);
  }
  return Buffer.concat(chunks, total);
}

/**
 * Standard input as text, at most `max` bytes (null when longer).
 * @param {number} max
 * @returns {string | null}
 */
export function readStdinBounded(max) {
  const b = readBounded(0, max);
  return b === null ? null : b.toString('utf8');
}

// Standard input of the current run (read once, on first use; main() sets the reader).
let readStdin = () => readStdinBounded(core.maxBytes);
/** @type {string | null} */
let stdinText = null;
/**
 * Sets the reader of standard input for the next run (read once, on first use).
 * @param {() => string | null} reader
 */
export function setStdin(reader) {
  readStdin = reader;
  stdinText = null;
}

/**
 * @param {string} file
 * @param {string} flag
 */
function tooLong(file, flag) {
  return new UsageError(
    'too_large',
    flag,
    `--${flag}: "${file}" is longer than ${core.maxBytes / 2 ** 20} MiB (the limit of a request)`,
  );
}

// A file's text, unparsed (or stdin for '-'), at most the request limit.
/**
 * @param {string} file
 * @param {string} flag
 * @returns {string}
 */
export function readTextArg(file, flag) {
  let text;
  try {
    if (file === '-') {
      if (stdinText === null) stdinText = readStdin();
      text = stdinText;
    } else {
      const b = readBounded(file, core.maxBytes);
      text = b === null ? null : b.toString('utf8');
    }
  } catch (/** @type {any} */ e) {
    throw new UsageError(
      'file_not_readable',
      flag,
      `--${flag}: cannot read "${file}": ${e.code || e.message}`,
    );
  }
  if (text === null) throw tooLong(file, flag);
  return text;
}

// A file's JSON, read by the core's strict reader (a key given twice, nesting, size and
// numbers beyond a double are refused as in a request).
/**
 * @param {string} file
 * @param {string} flag
 * @returns {unknown}
 */
export function readJsonArg(file, flag) {
  const text = readTextArg(file, flag);
  try {
    return core.parseJson(text);
  } catch (/** @type {any} */ e) {
    if (!(e instanceof TrainmemError)) throw e;
    const at = e.field ? ` at ${e.field}` : '';
    throw new UsageError(e.code, flag, `--${flag}: "${file}"${at}: ${e.message}`, e.field);
  }
}
