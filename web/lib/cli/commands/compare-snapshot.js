// @ts-check
// trainmem compare-snapshot: reads the snapshot file named on the command line, sends the
// request flags as `request` (a peakMemory request) beside `measured`, and prints its own table.
import { TrainmemError } from '../../errors.js';
import { cellText } from '../render.js';
import { readBounded } from '../values.js';

/** @type {import('./index.js').Command} */
export default {
  fn: 'compareSnapshot',
  summary:
    'a PyTorch memory snapshot (or memory_stats() JSON) beside the prediction of the same run',
  examples: [
    'trainmem compare-snapshot snapshot.pickle --model gpt2 --micro-batch 8 --seq-len 1024 --optimizer adamw',
    'trainmem compare-snapshot snapshot.pickle --model bert-large-uncased --micro-batch 4 --seq-len 512 --json',
    'trainmem compare-snapshot --model llama-2-7b --micro-batch 1 --seq-len 2048 --max-allocated 60GiB --nvidia-smi-used 71GiB',
  ],
  /** The file named on the command line, as bytes (at most the reader's limit, `max`). */
  readInput: (/** @type {string} */ file, /** @type {number} */ max) => {
    const b = readBounded(file, max);
    if (b === null) {
      throw new TrainmemError(
        'too_large',
        'snapshot',
        `"${file}" is longer than ${max / 2 ** 30} GiB, the snapshot reader's limit`,
      );
    }
    return b;
  },
  run(tm, flags, snapshot) {
    const { measured, ...request } = flags;
    /** @type {Record<string, unknown>} */
    const r = { request };
    if (measured !== undefined) r.measured = measured;
    if (snapshot !== undefined) r.snapshot = snapshot;
    // (JSON from the command line: the core checks every field)
    return tm.compareSnapshot(
      /** @type {import('../../index.js').CompareSnapshotRequest} */ (/** @type {unknown} */ (r)),
    );
  },
  // The flags set `request.*` (the peakMemory request) and `measured.*`.
  flagField: (/** @type {string} */ field) =>
    field.startsWith('request.') ? field.slice('request.'.length) : field,
  render: renderComparison,
};

// compare-snapshot's table: totals, the difference per category, the steps, the peak, causes.
/**
 * @param {import('../../index.js').CompareSnapshotResult} r
 * @param {boolean} markdown
 */
function renderComparison(r, markdown) {
  const b = (/** @type {number | null | undefined} */ n) =>
    n === null || n === undefined ? '—' : cellText(n, true);
  /** @type {string[]} */
  const sections = [];
  /** @type {(heads: string[], rows: (string | number)[][]) => string} */
  const table = (heads, rows) => {
    if (markdown) {
      return [
        `| ${heads.join(' | ')} |`,
        `| ${heads.map((_, i) => (i === 0 ? '---' : '---:')).join(' | ')} |`,
        ...rows.map((row) => `| ${row.map((c) => String(c).replace(/\|/g, '\\|')).join(' | ')} |`),
      ].join('\n');
    }
    const widths = heads.map((h, i) =>
      Math.max(h.length, ...rows.map((row) => String(row[i]).length)),
    );
    const line = (/** @type {(string | number)[]} */ row) =>
      row
        .map((c, i) => (i === 0 ? String(c).padEnd(widths[i]) : String(c).padStart(widths[i])))
        .join('  ')
        .trimEnd();
    return [line(heads), widths.map((w) => '-'.repeat(w)).join('  '), ...rows.map(line)].join('\n');
  };
  sections.push(
    table(
      ['total', 'measured', 'predicted', 'difference'],
      r.totals.map((t) => [t.what, b(t.measuredBytes), b(t.predictedBytes), b(t.differenceBytes)]),
    ),
  );
  sections.push(
    table(
      ['at the peak', 'measured', 'predicted', 'difference'],
      r.categories.map((c) => [
        c.category,
        b(c.measuredBytes),
        b(c.predictedBytes),
        b(c.differenceBytes),
      ]),
    ),
  );
  const m = r.measured;
  if (m && m.source === 'snapshot') {
    const phase = m.peak.phase ? `, ${m.peak.phase}` : '';
    const step =
      m.peak.step >= 0 ? `step ${m.peak.step + 1} of ${m.steps.count}` : 'outside a step';
    sections.push(
      [
        `steps: ${m.steps.count} (${m.steps.method}); peak at trace entry ${m.peak.event} (${step}${phase})`,
        ...m.peak.topFrames
          .slice(0, 5)
          .map(
            (f) =>
              `  ${b(f.bytes).padStart(28)}  ${f.filename ? `${f.filename}:${f.line} ` : ''}${f.name} [${f.category}]`,
          ),
      ].join('\n'),
    );
  }
  sections.push(
    r.causes.length
      ? ['likely causes:', ...r.causes.map((c) => `  - ${c.message} [${c.code}]`)].join('\n')
      : 'likely causes: none found',
  );
  return sections.join('\n\n');
}
