// web/app/numbers.js against the reference it replaces: Intl.NumberFormat (Node's ICU) for
// "en" and "ar-u-nu-latn" with the page's three option sets, on fixed edge cases and on
// seeded random values across magnitudes.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { numberFormat } from '../../web/app/numbers.js';

const OPTIONS = [
  [{ fractionDigits: 0 }, { maximumFractionDigits: 0 }],
  [{ fractionDigits: 2 }, { minimumFractionDigits: 2, maximumFractionDigits: 2 }],
  [{ significantDigits: 4 }, { maximumSignificantDigits: 4 }],
];
const EDGES = [
  0,
  -0,
  1,
  -1,
  0.4,
  0.5,
  0.6,
  1.5,
  2.5,
  -2.5,
  9.995,
  9999.5,
  99999.5,
  0.125,
  1234.005,
  0.0004,
  0.0006,
  0.005,
  0.000123456,
  12345.6789,
  1234567,
  1e21,
  1.7976931348623157e308,
  5e-324,
  6738415616,
  13476831232,
  40.43,
  2 ** 53,
  2 ** 64,
  NaN,
  Infinity,
  -Infinity,
  0.1 + 0.2,
];

function lcg(seed) {
  let s = seed >>> 0;
  return () => (s = (Math.imul(s, 1664525) + 1013904223) >>> 0) / 4294967296;
}

for (const lang of ['en', 'ar']) {
  const locale = lang === 'ar' ? 'ar-u-nu-latn' : 'en';
  for (const [how, intl] of OPTIONS) {
    test(`numbers: ${lang} ${JSON.stringify(intl)} equals Intl.NumberFormat`, () => {
      const ours = numberFormat(lang, how);
      const ref = new Intl.NumberFormat(locale, intl);
      const r = lcg(7);
      const values = [...EDGES];
      for (let i = 0; i < 4000; i++) {
        const mag = 10 ** Math.floor(r() * 30 - 10);
        const v = (r() - 0.3) * mag;
        values.push(v, Math.round(v * 1000) / 1000, Math.round(v));
      }
      for (const v of values) assert.equal(ours(v), ref.format(v), `value ${v}`);
    });
  }
}
