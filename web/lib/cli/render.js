// @ts-check
// Rendering of results: a table (or Markdown) of every field, bytes in both unit systems.
import { flatten, humanBytes, isBytesKey } from '../units.js';

// Arrays in a table: a short list of scalars as JSON, a long one (or one of big objects) as a
// pointer to --format json, others one row per entry.
/** @param {unknown[]} value */
const tableArray = (value) => {
  if (value.every((v) => v === null || typeof v !== 'object') && value.length <= 16) {
    return JSON.stringify(value);
  }
  if (
    value.length > 16 ||
    value.some((v) => v && typeof v === 'object' && !Array.isArray(v) && Object.keys(v).length > 8)
  ) {
    return `(${value.length} entries: see --format json)`;
  }
  return undefined;
};

/** @param {unknown[]} results */
function tableRows(results) {
  const perResult = results.map((r) => {
    return new Map(flatten(r, { array: tableArray, empty: '{}' }));
  });
  /** @type {string[]} */
  const paths = [];
  for (const m of perResult) for (const p of m.keys()) if (!paths.includes(p)) paths.push(p);
  return paths.map((p) => {
    const cells = perResult.map((m) => (m.has(p) ? m.get(p) : ''));
    const bytes = isBytesKey(p);
    return { path: p, cells, bytes };
  });
}

/** @type {(v: unknown, bytes: boolean) => string} */
export const cellText = (v, bytes) => {
  if (typeof v === 'number') {
    const plain = Number.isInteger(v) ? v.toLocaleString('en-US') : String(v);
    const human = bytes ? humanBytes(v) : '';
    return human ? `${plain} (${human})` : plain;
  }
  return String(v);
};

// Plain tables: numbers right-aligned, text left-aligned and cut at TEXT_WIDTH characters
// (--format json or markdown keep every character).
const TEXT_WIDTH = 72;
/**
 * @param {unknown[]} results
 * @param {boolean} markdown
 */
export function renderTable(results, markdown) {
  const heads = ['field', ...results.map((_, i) => (results.length > 1 ? `#${i + 1}` : 'value'))];
  const rows = tableRows(results);
  if (markdown) {
    const esc = (/** @type {unknown} */ s) => String(s).replace(/\|/g, '\\|');
    const body = rows.map((r) => [r.path, ...r.cells.map((c) => cellText(c, r.bytes))]);
    return [
      `| ${heads.join(' | ')} |`,
      `| ${heads.map((_, i) => (i === 0 ? '---' : '---:')).join(' | ')} |`,
      ...body.map((r) => `| ${r.map(esc).join(' | ')} |`),
    ].join('\n');
  }
  const cut = (/** @type {string} */ t) =>
    t.length > TEXT_WIDTH ? `${t.slice(0, TEXT_WIDTH - 1)}…` : t;
  const body = rows.map((r) => [
    { text: r.path, right: false },
    ...r.cells.map((c) => ({ text: cut(cellText(c, r.bytes)), right: typeof c === 'number' })),
  ]);
  const widths = heads.map((h, i) => Math.max(h.length, ...body.map((r) => r[i].text.length)));
  const line = (/** @type {{ text: string, right: boolean }[]} */ r) =>
    r
      .map((c, i) => (c.right ? c.text.padStart(widths[i]) : c.text.padEnd(widths[i])))
      .join('  ')
      .trimEnd();
  return [
    line(heads.map((text) => ({ text, right: false }))),
    widths.map((w) => '-'.repeat(w)).join('  '),
    ...body.map(line),
  ].join('\n');
}
