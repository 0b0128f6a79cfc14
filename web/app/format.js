// @ts-check
// Result formatting shared by the panels and the exports: flattening a result into rows and
// recognising byte quantities (web/lib/units.js, shared with the command line).
import { flatten as flattenRows, isBytesKey } from '../lib/units.js';

export { isBytesKey };

/**
 * [[path, value]] for every scalar leaf: short lists as text ("a, b"; pairs as "a–b"), longer
 * ones and lists of objects as their length, objects below four levels as "{…}".
 * @param {unknown} obj
 */
export const flatten = (obj) => flattenRows(obj, { array: listCell, maxDepth: 3 });

/** @param {unknown[]} list */
function listCell(list) {
  if (list.every((v) => v === null || typeof v !== 'object') && list.length <= 16) {
    return list.join(', ');
  }
  if (list.every((v) => Array.isArray(v) && v.length === 2) && list.length <= 16) {
    return list
      .map((v) => `${/** @type {unknown[]} */ (v)[0]}–${/** @type {unknown[]} */ (v)[1]}`)
      .join(', ');
  }
  return `[${list.length}]`;
}

/** Breakdown entries with a positive byte count, in a stable order. */
export const PART_ORDER = [
  'weights',
  'masterWeights',
  'gradients',
  'optimizerState',
  'activations',
  'temporaries',
  'buffers',
  'runtime',
  'container',
];

/**
 * A breakdown entry: a number of bytes, or the bytes with the source of their formula.
 * @typedef {number | { bytes?: number, source?: string } | null | undefined} BreakdownEntry
 */

/**
 * Bytes of a breakdown entry: a number, or { bytes, source }.
 * @param {BreakdownEntry} v
 */
export const partBytes = (v) =>
  typeof v === 'number' ? v : typeof v?.bytes === 'number' ? v.bytes : NaN;

/**
 * A breakdown's parts as [key, bytes, source], in the page's order, those of 0 bytes left out.
 * @param {object | null | undefined} breakdown a result's breakdown: key -> BreakdownEntry
 * @returns {Array<[string, number, string]>}
 */
export function breakdownParts(breakdown) {
  if (!breakdown || typeof breakdown !== 'object') return [];
  // (read as objects: a number's `source` is undefined)
  const values = /** @type {Array<[string, { bytes?: number, source?: string }]>} */ (
    Object.entries(breakdown)
  );
  const entries = values
    .map(
      ([k, v]) =>
        /** @type {[string, number, string]} */ ([
          k,
          partBytes(v),
          typeof v?.source === 'string' ? v.source : '',
        ]),
    )
    .filter(([, b]) => b > 0);
  /** @param {string} k */
  const rank = (k) => (PART_ORDER.includes(k) ? PART_ORDER.indexOf(k) : PART_ORDER.length);
  return entries.sort((a, b) => rank(a[0]) - rank(b[0]));
}

/** @param {unknown} v */
function csvCell(v) {
  const s = String(v ?? '');
  // A leading = + - @ would be a formula in a spreadsheet: prefix a quote (CSV injection).
  const safe = /^[=+\-@\t\r]/.test(s) && !/^-?\d/.test(s) ? `'${s}` : s;
  return /[",\n\r]/.test(safe) ? `"${safe.replace(/"/g, '""')}"` : safe;
}

/** @param {unknown[][]} rows */
export function toCSV(rows) {
  return rows.map((r) => r.map(csvCell).join(',')).join('\n') + '\n';
}

/** @param {unknown[][]} rows */
export function toMarkdown(rows, header = ['field', 'value']) {
  /** @param {unknown} v */
  const esc = (v) =>
    String(v ?? '')
      .replace(/\|/g, '\\|')
      .replace(/\n/g, ' ');
  const lines = [
    `| ${header.map(esc).join(' | ')} |`,
    `| ${header.map(() => '---').join(' | ')} |`,
  ];
  for (const r of rows) lines.push(`| ${r.map(esc).join(' | ')} |`);
  return lines.join('\n') + '\n';
}
