// @ts-check
// Counts and bytes as people write them, and results as rows: one copy, used by the command
// line (web/lib/cli/) and the page (web/app/). Parsers return NaN for text they do not read;
// the callers turn that into their own error, naming the flag or the field.
//
// One grammar for every number:
//   [+-] digits [.digits] [e[+-]digits]
// where the digits before the point may be grouped by "_" anywhere (1_000_000) or by "," in
// groups of three (6,738,415,616). "1,5" is refused rather than read as 15 or as 1.5 (the comma
// is the decimal sign in many languages). Arabic-Indic digits and separators read as their Latin
// forms (westernDigits). Counts take k, M, B (or G), T; bytes take B, kB, MB,
// GB, TB, PB (10^3 steps) or KiB, MiB, GiB, TiB, PiB (2^10 steps), case-insensitively.

const NUMBER = /^[+-]?(\d[\d_]*|\d{1,3}(,\d{3})+)?(\.\d+)?(e[+-]?\d+)?$/i;

/** Decimal exponent of each count suffix (6.7B = 6.7e9). */
const COUNT_SUFFIX = { k: 3, m: 6, b: 9, g: 9, t: 12 };

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

/**
 * Arabic-Indic digits (٠–٩, U+0660–0669) and their Persian forms (۰–۹, U+06F0–06F9) as Latin
 * digits, the Arabic decimal separator (٫) as "." and the Arabic thousands separator (٬) as ",":
 * "١٦" reads as 16, "٦٫٧" as 6.7 (Unicode's Arabic block; the digits' values are their code
 * points' offsets).
 * @param {unknown} text
 */
export function westernDigits(text) {
  return String(text).replace(/[\u0660-\u0669\u06f0-\u06f9\u066b\u066c]/g, (c) => {
    const u = c.charCodeAt(0);
    if (u === 0x066b) return '.';
    if (u === 0x066c) return ',';
    return String(u >= 0x06f0 ? u - 0x06f0 : u - 0x0660);
  });
}

/**
 * The number text without its separators, or null when it is not one.
 * @param {unknown} text
 */
function plain(text) {
  const t = westernDigits(text).trim();
  if (!t || !NUMBER.test(t) || !/\d/.test(t)) return null;
  return t.replace(/[_,]/g, '');
}

/**
 * `plain` times 10^shift, shifted in the text, so "6.7" with shift 9 is exactly 6.7e9.
 * @param {string} p
 * @param {number} shift
 */
function shifted(p, shift) {
  const [, mant, exp = '0'] = /^([^eE]*)(?:[eE](.*))?$/.exec(p) || [];
  return Number(`${mant}e${Number(exp) + shift}`);
}

/**
 * A decimal number ("6.7e9", "1_000", "6,738,415,616") -> the nearest double, or NaN.
 * @param {unknown} text
 */
export function parseNumber(text) {
  const p = plain(text);
  return p === null ? NaN : Number(p);
}

/**
 * A count ("7e9", "6.7B", "124M", "6,738,415,616") -> the nearest double to the exact value,
 * or NaN. A count with a suffix is read as if the suffix were an exponent ("6.7B" is "6.7e9").
 * @param {unknown} text
 */
export function parseCount(text) {
  const m = /^(.*?)\s*([kmbgt])$/i.exec(westernDigits(text).trim());
  if (!m) return parseNumber(text);
  const p = plain(m[1]);
  return p === null ? NaN : shifted(p, COUNT_SUFFIX[/** @type {'k'} */ (m[2].toLowerCase())]);
}

/** True when the text ends in a count suffix (k, M, B, G, T). @param {unknown} text */
export const hasCountSuffix = (text) => /[kmbgt]$/i.test(String(text).trim());

/**
 * Bytes ("80GB", "80 GiB", "1.5e9", "512") -> a number of bytes, or NaN. Decimal units shift
 * the decimal exponent in the text (exact as written); binary ones multiply by a power of two
 * (exact for any double).
 * @param {unknown} text
 */
export function parseBytes(text) {
  const m = /^(.*?)\s*([kmgtp]i?b|b)$/i.exec(westernDigits(text).trim());
  if (!m) return parseNumber(text);
  const unit = BYTE_UNITS[/** @type {'kb'} */ (m[2].toLowerCase())];
  const p = plain(m[1]);
  if (p === null) return NaN;
  if (unit >= 1e3 && unit % 1000 === 0) return shifted(p, Math.round(Math.log10(unit)));
  return Number(p) * unit;
}

/**
 * Whether a result field holds bytes: a name ending in "bytes" (totalBytes, bytes), the
 * difference from the simple formula, and every entry under `breakdown` or `optimizerStates`;
 * never a per-parameter figure or a fraction.
 * @param {string} path dotted path, e.g. "breakdown.weights.bytes" or "files[0].bytes"
 */
export function isBytesKey(path) {
  const last = (path.split('.').pop() || '').replace(/\[\d+\]$/, '');
  if (/perParam|fraction/i.test(last)) return false;
  return (
    /bytes$/i.test(last) ||
    last === 'differenceFromSimple' ||
    /(^|\.)(breakdown|optimizerStates)(\.|$)/.test(path)
  );
}

// Byte scales for the text form: decimal (GB = 10^9) beside binary (GiB = 2^30).
const SCALES = [
  [1e12, 'TB', 2 ** 40, 'TiB'],
  [1e9, 'GB', 2 ** 30, 'GiB'],
  [1e6, 'MB', 2 ** 20, 'MiB'],
  [1e3, 'kB', 2 ** 10, 'KiB'],
];

/**
 * Bytes in both unit systems at the scale of the value: "1.50 GB, 1.40 GiB"; "" under 1 kB.
 * @param {number} n
 */
export function humanBytes(n) {
  const s = SCALES.find(([d]) => Math.abs(n) >= /** @type {number} */ (d));
  if (!s) return '';
  const [d, dName, b, bName] = /** @type {[number, string, number, string]} */ (s);
  return `${(n / d).toFixed(2)} ${dName}, ${(n / b).toFixed(2)} ${bName}`;
}

/**
 * @typedef {object} FlattenOptions
 * @property {(list: unknown[]) => (string | undefined)} [array] an array's cell text, or
 *   undefined to list its entries one row each (`path[i]`)
 * @property {number} [maxDepth] objects deeper than this are one "{…}" cell
 * @property {string} [empty] the cell of an empty object (no row when absent)
 */

/**
 * Every scalar leaf of a result as [dotted path, value] rows.
 * @param {unknown} value
 * @param {FlattenOptions} [options]
 * @returns {Array<[string, unknown]>}
 */
export function flatten(value, options = {}) {
  const { array = (list) => `[${list.length}]`, maxDepth = Infinity, empty } = options;
  /** @type {Array<[string, unknown]>} */
  const rows = [];
  /** @param {unknown} v @param {string} path @param {number} depth */
  const walk = (v, path, depth) => {
    if (Array.isArray(v)) {
      const cell = array(v);
      if (cell !== undefined) rows.push([path, cell]);
      else v.forEach((x, i) => walk(x, `${path}[${i}]`, depth + 1));
    } else if (v !== null && typeof v === 'object') {
      if (depth > maxDepth) {
        rows.push([path, '{…}']);
        return;
      }
      const keys = Object.keys(v);
      if (keys.length === 0 && empty !== undefined) rows.push([path, empty]);
      for (const k of keys)
        walk(/** @type {Record<string, unknown>} */ (v)[k], path ? `${path}.${k}` : k, depth + 1);
    } else rows.push([path, v]);
  };
  walk(value, '', 0);
  return rows;
}
