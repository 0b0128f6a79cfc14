// Flag values: numbers, counts (6.7B), bytes (80GiB), booleans, and files (or - for stdin).
import { readFileSync } from 'node:fs';
import * as units from '../units.js';
import { UsageError } from './usage-error.js';

// The grammar of numbers, counts and bytes is units.js's (one copy, shared with the page).
export function parseNumber(text, flag) {
  const n = units.parseNumber(text);
  if (Number.isNaN(n)) {
    throw new UsageError('invalid_number', flag, `--${flag} needs a number, got "${text}"`);
  }
  return n;
}
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
