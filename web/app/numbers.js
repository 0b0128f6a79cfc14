// @ts-check
// Number formatting without Intl: the page shows Latin digits with "," grouping and "." as the
// decimal point in both languages, which is what Intl.NumberFormat gives for "en" and
// "ar-u-nu-latn" (tests/js/numbers.test.js compares the two). Creating the first
// Intl.NumberFormat loads ICU's locale data: 35-90 ms measured on this machine, on the path to
// the first result; this costs nothing.
//
// Rounding follows ECMA-402: the number's shortest decimal form (Number.prototype.toString),
// rounded half away from zero ("halfExpand").

/**
 * A decimal: its digits (no leading zeros) and the place of the point within them.
 * @typedef {{ digits: string, point: number }} Decimal
 */

/**
 * Shortest decimal digits of |n| (no leading zeros) and the place of the point within them.
 * @param {number} n
 * @returns {Decimal}
 */
function decimal(n) {
  const [mant, exp] = Math.abs(n).toExponential().split('e');
  const digits = mant.replace('.', '');
  return { digits, point: Number(exp) + 1 };
}

/**
 * Rounds {digits, point} to `keep` digits before the point plus `frac` after it.
 * @param {Decimal} d
 * @param {number} frac
 * @returns {Decimal}
 */
function round({ digits, point }, frac) {
  const keep = point + frac; // digits kept, counted from the first digit
  if (keep < 0) return { digits: '0', point: 1 };
  if (keep >= digits.length) return { digits, point };
  let kept = digits.slice(0, keep);
  if (digits.charCodeAt(keep) >= 53 /* '5' */) {
    // add one unit in the last kept place, carrying leftwards
    const a = kept.split('').map(Number);
    let i = a.length - 1;
    while (i >= 0 && a[i] === 9) a[i--] = 0;
    if (i >= 0) a[i] += 1;
    else {
      a.unshift(1);
      point += 1;
    }
    kept = a.join('');
  }
  return kept ? { digits: kept, point } : { digits: '0', point: 1 };
}

/**
 * "1234567" → "1,234,567".
 * @param {string} s
 */
const group = (s) => s.replace(/\B(?=(\d{3})+(?!\d))/g, ',');

/**
 * The digits laid out with `minFrac`..`maxFrac` fraction digits (trailing zeros trimmed).
 * @param {Decimal} d
 * @param {number} minFrac
 * @param {number} maxFrac
 */
function layout({ digits, point }, minFrac, maxFrac) {
  let int;
  let frac;
  if (point <= 0) {
    int = '0';
    frac = '0'.repeat(-point) + digits;
  } else if (point >= digits.length) {
    int = digits + '0'.repeat(point - digits.length);
    frac = '';
  } else {
    int = digits.slice(0, point);
    frac = digits.slice(point);
  }
  frac = frac.slice(0, maxFrac).replace(/0+$/, '');
  if (frac.length < minFrac) frac += '0'.repeat(minFrac - frac.length);
  int = int.replace(/^0+(?=\d)/, '');
  return frac ? `${group(int)}.${frac}` : group(int);
}

/**
 * A formatter like `new Intl.NumberFormat(lang === 'ar' ? 'ar-u-nu-latn' : 'en', options)`
 * for the options the page uses: { maximumFractionDigits: 0 }, { minimumFractionDigits: 2,
 * maximumFractionDigits: 2 } and { maximumSignificantDigits: 4 }.
 * @param {string} lang 'ar', else English
 * @param {{ fractionDigits?: number, significantDigits?: number }} how
 */
export function numberFormat(lang, how) {
  // Arabic puts a left-to-right mark before the minus sign.
  const minus = lang === 'ar' ? '\u200e-' : '-';
  const nan = lang === 'ar' ? '\u0644\u064a\u0633\u00a0\u0631\u0642\u0645\u064b\u0627' : 'NaN'; // CLDR
  return (/** @type {number} */ n) => {
    if (Number.isNaN(n)) return nan;
    const sign = n < 0 || Object.is(n, -0) ? minus : '';
    if (!Number.isFinite(n)) return `${sign}∞`;
    const d = n === 0 ? { digits: '0', point: 1 } : decimal(n);
    if (how.significantDigits) {
      const r = round(d, how.significantDigits - d.point);
      return sign + layout(r, 0, Math.max(0, how.significantDigits - r.point));
    }
    const f = how.fractionDigits || 0;
    return sign + layout(round(d, f), f, f);
  };
}
