// web/lib/units.js: the one grammar of counts and bytes (command line and page), and the
// rows of a result. Expected values are written by hand from the unit definitions: k/M/B/T are
// 10^3/10^6/10^9/10^12, kB..PB steps of 10^3 and KiB..PiB steps of 2^10 (IEC 80000-13).
import { test } from 'node:test';
import assert from 'node:assert/strict';
import {
  flatten,
  humanBytes,
  isBytesKey,
  parseBytes,
  parseCount,
  parseNumber,
} from '../../web/lib/units.js';
import { flatten as pageFlatten, isBytesKey as pageIsBytesKey } from '../../web/app/format.js';
import { main } from '../../web/lib/cli.js';

test('numbers: sign, fraction, exponent, "_" anywhere, "," only in groups of three', () => {
  const cases = [
    ['512', 512],
    ['  512 ', 512],
    ['-3', -3],
    ['+0.5', 0.5],
    ['.5', 0.5],
    ['1e3', 1000],
    ['2.5E-1', 0.25],
    ['1_000_000', 1000000],
    ['6,738,415,616', 6738415616],
    ['1,000.5', 1000.5],
  ];
  for (const [text, want] of cases) assert.equal(parseNumber(text), want, text);
  for (const text of [
    '',
    ' ',
    'abc',
    '1,5',
    '1,00',
    '12,3456',
    ',100',
    '0x10',
    'Infinity',
    '1.',
    'e5',
    '5 5',
  ]) {
    assert.ok(Number.isNaN(parseNumber(text)), `"${text}" is not a number`);
  }
});

test('counts: k/M/B(G)/T suffixes, read exactly as the decimal they name', () => {
  const cases = [
    ['7B', 7e9],
    ['7b', 7e9],
    ['6.7B', 6.7e9], // 6700000000 exactly (6.7 * 1e9 would be 6700000000.000001)
    ['124M', 124e6],
    ['124 M', 124e6],
    ['1.5k', 1500],
    ['2G', 2e9],
    ['1T', 1e12],
    ['7e9', 7e9],
    ['6,738,415,616', 6738415616],
    ['1,024M', 1024e6],
    ['1_5k', 15000],
  ];
  for (const [text, want] of cases) assert.equal(parseCount(text), want, text);
  assert.equal(parseCount('6.7B'), 6700000000);
  for (const text of ['B', '7X', '7BB', '1,5M', 'sevenB', '7 B B']) {
    assert.ok(Number.isNaN(parseCount(text)), `"${text}" is not a count`);
  }
});

test('bytes: decimal units in steps of 10^3, binary ones in steps of 2^10', () => {
  const cases = [
    ['512', 512],
    ['512B', 512],
    ['1kB', 1000],
    ['80GB', 80e9],
    ['80 gb', 80e9],
    ['1.5GB', 1.5e9],
    ['2TB', 2e12],
    ['1PB', 1e15],
    ['1KiB', 1024],
    ['1.5GiB', 1.5 * 1073741824],
    ['80GiB', 85899345920],
    ['1TiB', 1099511627776],
    ['1PiB', 1125899906842624],
    ['1,024MiB', 1073741824],
  ];
  for (const [text, want] of cases) assert.equal(parseBytes(text), want, text);
  for (const text of ['GB', '1.5GiBs', '1XB', '1,5GB']) {
    assert.ok(Number.isNaN(parseBytes(text)), `"${text}" is not bytes`);
  }
});

test('the command line reads counts and bytes with the same grammar (commas included)', async () => {
  const out = [];
  const io = { out: (t) => out.push(t), err: (t) => out.push(t), stdin: () => '' };
  const code = await main(
    ['checkpoint-size', '--params', '1,000,000', '--optimizer', 'sgd', '--weight-dtype', 'fp32'],
    io,
  );
  assert.equal(code, 0, out.join(''));
  assert.equal(JSON.parse(out.join('')).params, 1e6);
});

test('which result fields are bytes: one rule for the command line and the page', () => {
  const bytes = [
    'totalBytes',
    'bytes',
    'breakdown.weights',
    'breakdown.weights.bytes',
    'simple.breakdown.optimizerState',
    'optimizerStates.exp_avg',
    'files[0].bytes',
    'container.alignmentPaddingBytes',
    'differenceFromSimple',
  ];
  const notBytes = [
    'bytesPerParam',
    'simple.bytesPerParam',
    'params',
    'optimizerStateElements.exp_avg',
    'recomputeFraction',
    'copies',
  ];
  for (const p of bytes) assert.equal(isBytesKey(p), true, p);
  for (const p of notBytes) assert.equal(isBytesKey(p), false, p);
  assert.equal(pageIsBytesKey, isBytesKey);
});

test('humanBytes: both unit systems at the scale of the value', () => {
  assert.equal(humanBytes(1.5e9), '1.50 GB, 1.40 GiB'); // 1.5e9 / 2^30 = 1.397
  assert.equal(humanBytes(2048), '2.05 kB, 2.00 KiB');
  assert.equal(humanBytes(999), '');
});

test('flatten: dotted paths of the leaves, arrays as the caller says', () => {
  const value = { a: 1, b: { c: 'x', d: [1, 2] }, e: {}, f: [{ g: 1 }, { g: 2 }] };
  assert.deepEqual(flatten(value), [
    ['a', 1],
    ['b.c', 'x'],
    ['b.d', '[2]'],
    ['f', '[2]'],
  ]);
  assert.deepEqual(flatten(value, { array: () => undefined, empty: '{}' }), [
    ['a', 1],
    ['b.c', 'x'],
    ['b.d[0]', 1],
    ['b.d[1]', 2],
    ['e', '{}'],
    ['f[0].g', 1],
    ['f[1].g', 2],
  ]);
  // the page: short lists as text, pairs as ranges, four levels deep at most
  assert.deepEqual(
    pageFlatten({
      l: [1, 2],
      r: [
        [0, 3],
        [5, 7],
      ],
      d: { e: { f: { g: { h: 1 } } } },
    }),
    [
      ['l', '1, 2'],
      ['r', '0–3, 5–7'],
      ['d.e.f.g', '{…}'],
    ],
  );
});
