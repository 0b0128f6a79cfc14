// Result formatting shared by the panels and the exports: flattening a result into rows and
// recognising byte quantities (keys ending in "Bytes", and breakdown entries).

export function isBytesKey(path) {
  const last = path.split('.').pop();
  return /bytes$/i.test(last) || /^breakdown\./.test(path) || /\.breakdown\./.test(path);
}

/** [[path, value]] for every scalar leaf (arrays of objects are summarised by length). */
export function flatten(obj, prefix = '', rows = [], depth = 0) {
  if (obj === null || typeof obj !== 'object') {
    rows.push([prefix, obj]);
    return rows;
  }
  if (Array.isArray(obj)) {
    if (obj.every((v) => v === null || typeof v !== 'object') && obj.length <= 16) {
      rows.push([prefix, obj.join(', ')]);
    } else if (obj.every((v) => Array.isArray(v) && v.length === 2) && obj.length <= 16) {
      rows.push([prefix, obj.map(([a, b]) => `${a}–${b}`).join(', ')]);
    } else {
      rows.push([prefix, `[${obj.length}]`]);
    }
    return rows;
  }
  if (depth > 3) {
    rows.push([prefix, '{…}']);
    return rows;
  }
  for (const [k, v] of Object.entries(obj))
    flatten(v, prefix ? `${prefix}.${k}` : k, rows, depth + 1);
  return rows;
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

/** Bytes of a breakdown entry: a number, or { bytes, source }. */
export const partBytes = (v) =>
  typeof v === 'number' ? v : typeof v?.bytes === 'number' ? v.bytes : NaN;

export function breakdownParts(breakdown) {
  if (!breakdown || typeof breakdown !== 'object') return [];
  const entries = Object.entries(breakdown)
    .map(([k, v]) => [k, partBytes(v), typeof v?.source === 'string' ? v.source : ''])
    .filter(([, b]) => b > 0);
  const rank = (k) => (PART_ORDER.includes(k) ? PART_ORDER.indexOf(k) : PART_ORDER.length);
  return entries.sort((a, b) => rank(a[0]) - rank(b[0]));
}

function csvCell(v) {
  const s = String(v ?? '');
  // A leading = + - @ would be a formula in a spreadsheet: prefix a quote (CSV injection).
  const safe = /^[=+\-@\t\r]/.test(s) && !/^-?\d/.test(s) ? `'${s}` : s;
  return /[",\n\r]/.test(safe) ? `"${safe.replace(/"/g, '""')}"` : safe;
}

export function toCSV(rows) {
  return rows.map((r) => r.map(csvCell).join(',')).join('\n') + '\n';
}

export function toMarkdown(rows, header = ['field', 'value']) {
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
