// Rendering of results: a table (or Markdown) of every field, bytes in both unit systems.
export const isBytesKey = (path) => {
  const last = path
    .split('.')
    .pop()
    .replace(/\[\d+\]$/, '');
  if (/perParam|PerParam|fraction|Fraction/.test(last)) return false;
  return (
    /Bytes$|^bytes$|^differenceFromSimple$/.test(last) ||
    /(^|\.)(breakdown|optimizerStates)(\.|$)/.test(path)
  );
};
// Bytes in both unit systems, as the page shows them: decimal (GB = 10^9) and binary
// (GiB = 2^30), at the scale of the value.
const SCALES = [
  [1e12, 'TB', 2 ** 40, 'TiB'],
  [1e9, 'GB', 2 ** 30, 'GiB'],
  [1e6, 'MB', 2 ** 20, 'MiB'],
  [1e3, 'kB', 2 ** 10, 'KiB'],
];
export const humanBytes = (n) => {
  const s = SCALES.find(([d]) => Math.abs(n) >= d);
  if (!s) return '';
  return `${(n / s[0]).toFixed(2)} ${s[1]}, ${(n / s[2]).toFixed(2)} ${s[3]}`;
};

export function flatten(value, path, rows) {
  if (Array.isArray(value)) {
    if (value.every((v) => v === null || typeof v !== 'object') && value.length <= 16) {
      rows.push([path, JSON.stringify(value)]);
    } else if (
      value.length > 16 ||
      value.some(
        (v) => v && typeof v === 'object' && !Array.isArray(v) && Object.keys(v).length > 8,
      )
    ) {
      rows.push([path, `(${value.length} entries: see --format json)`]);
    } else {
      value.forEach((v, i) => flatten(v, `${path}[${i}]`, rows));
    }
  } else if (value !== null && typeof value === 'object') {
    const keys = Object.keys(value);
    if (keys.length === 0) rows.push([path, '{}']);
    for (const k of keys) flatten(value[k], path ? `${path}.${k}` : k, rows);
  } else {
    rows.push([path, value]);
  }
}

function tableRows(results) {
  const perResult = results.map((r) => {
    const rows = [];
    flatten(r, '', rows);
    return new Map(rows);
  });
  const paths = [];
  for (const m of perResult) for (const p of m.keys()) if (!paths.includes(p)) paths.push(p);
  return paths.map((p) => {
    const cells = perResult.map((m) => (m.has(p) ? m.get(p) : ''));
    const bytes = isBytesKey(p);
    return { path: p, cells, bytes };
  });
}

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
export function renderTable(results, markdown) {
  const heads = ['field', ...results.map((_, i) => (results.length > 1 ? `#${i + 1}` : 'value'))];
  const rows = tableRows(results);
  if (markdown) {
    const esc = (s) => String(s).replace(/\|/g, '\\|');
    const body = rows.map((r) => [r.path, ...r.cells.map((c) => cellText(c, r.bytes))]);
    return [
      `| ${heads.join(' | ')} |`,
      `| ${heads.map((_, i) => (i === 0 ? '---' : '---:')).join(' | ')} |`,
      ...body.map((r) => `| ${r.map(esc).join(' | ')} |`),
    ].join('\n');
  }
  const cut = (t) => (t.length > TEXT_WIDTH ? `${t.slice(0, TEXT_WIDTH - 1)}…` : t);
  const body = rows.map((r) => [
    { text: r.path, right: false },
    ...r.cells.map((c) => ({ text: cut(cellText(c, r.bytes)), right: typeof c === 'number' })),
  ]);
  const widths = heads.map((h, i) => Math.max(h.length, ...body.map((r) => r[i].text.length)));
  const line = (r) =>
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
