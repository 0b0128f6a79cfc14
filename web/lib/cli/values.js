// Flag values: numbers, counts (6.7B), bytes (80GiB), booleans, and files (or - for stdin).
import { readFileSync } from 'node:fs';
import { UsageError } from './usage-error.js';

const NUMBER = /^[+-]?(\d[\d_]*)?(\.\d+)?(e[+-]?\d+)?$/i;
const COUNT_SUFFIX = { k: 3, K: 3, m: 6, M: 6, b: 9, B: 9, g: 9, G: 9, t: 12, T: 12 };
// Decimal (SI) and binary (IEC) byte units. Source: IEC 80000-13.
const BYTE_UNITS = {
  b: 1,
  kb: 1e3,
  mb: 1e6,
  gb: 1e9,
  tb: 1e12,
  pb: 1e15,
  kib: 2 ** 10,
  mib: 2 ** 20,
  gib: 2 ** 30,
  tib: 2 ** 40,
  pib: 2 ** 50,
};

// A decimal number text -> the nearest double (parsed as a whole string, so 6.7e9 is exact).
export function parseNumber(text, flag) {
  const t = String(text).trim();
  if (!t || !NUMBER.test(t) || !/\d/.test(t)) {
    throw new UsageError('invalid_number', flag, `--${flag} needs a number, got "${text}"`);
  }
  return Number(t.replace(/_/g, ''));
}
export function parseCount(text, flag) {
  const m = /^(.*?)([kKmMbBgGtT])$/.exec(String(text).trim());
  if (!m) return parseNumber(text, flag);
  const base = String(m[1]).trim().replace(/_/g, '');
  if (!NUMBER.test(base) || !/\d/.test(base)) {
    throw new UsageError(
      'invalid_number',
      flag,
      `--${flag} needs a count like 7e9 or 6.7B, got "${text}"`,
    );
  }
  // Shift the decimal exponent in the text, so "6.7B" parses exactly like "6.7e9".
  const [, mant, exp = '0'] = /^([^eE]*)(?:[eE](.*))?$/.exec(base);
  return Number(`${mant}e${Number(exp) + COUNT_SUFFIX[m[2]]}`);
}
export function parseBytes(text, flag) {
  const m = /^(.*?)\s*([kKmMgGtTpP]i?[bB]|[bB])$/.exec(String(text).trim());
  if (!m) return parseNumber(text, flag);
  const unit = BYTE_UNITS[m[2].toLowerCase()];
  const n = parseNumber(m[1], flag);
  if (unit >= 1e3 && unit % 1000 === 0) {
    const [, mant, exp = '0'] = /^([^eE]*)(?:[eE](.*))?$/.exec(m[1].trim().replace(/_/g, ''));
    return Number(`${mant}e${Number(exp) + Math.round(Math.log10(unit))}`);
  }
  return n * unit; // binary units: exact for any value a double can hold
}
export function parseBoolean(text, flag) {
  if (text === undefined || text === true) return true;
  const t = String(text).toLowerCase();
  if (['true', 'yes', '1', 'on'].includes(t)) return true;
  if (['false', 'no', '0', 'off'].includes(t)) return false;
  throw new UsageError('invalid_boolean', flag, `--${flag} is true or false, got "${text}"`);
}

// Standard input of the current run (read once, on first use; main() sets the reader).
let readStdin = () => readFileSync(0, 'utf8');
let stdinText = null;
/** Sets the reader of standard input for the next run (read once, on first use). */
export function setStdin(reader) {
  readStdin = reader;
  stdinText = null;
}
// A file's text, unparsed (or stdin for '-').
export function readTextArg(file, flag) {
  try {
    if (file === '-') {
      if (stdinText === null) stdinText = readStdin();
      return stdinText;
    }
    return readFileSync(file, 'utf8');
  } catch (e) {
    throw new UsageError(
      'file_not_readable',
      flag,
      `--${flag}: cannot read "${file}": ${e.code || e.message}`,
    );
  }
}

export function readJsonArg(file, flag) {
  let text;
  try {
    if (file === '-') {
      if (stdinText === null) stdinText = readStdin();
      text = stdinText;
    } else {
      text = readFileSync(file, 'utf8');
    }
  } catch (e) {
    throw new UsageError(
      'file_not_readable',
      flag,
      `--${flag}: cannot read "${file}": ${e.code || e.message}`,
    );
  }
  try {
    return JSON.parse(text);
  } catch (e) {
    throw new UsageError(
      'invalid_json',
      flag,
      `--${flag}: "${file}" is not valid JSON: ${e.message}`,
    );
  }
}
