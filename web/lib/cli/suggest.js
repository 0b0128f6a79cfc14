// @ts-check
// Did-you-mean for unknown flags and commands: the nearest candidate by edit distance.
/**
 * @param {string} a
 * @param {string} b
 */
function levenshtein(a, b) {
  const d = Array.from({ length: b.length + 1 }, (_, j) => j);
  for (let i = 1; i <= a.length; i++) {
    let prev = d[0];
    d[0] = i;
    for (let j = 1; j <= b.length; j++) {
      const tmp = d[j];
      d[j] = Math.min(d[j] + 1, d[j - 1] + 1, prev + (a[i - 1] === b[j - 1] ? 0 : 1));
      prev = tmp;
    }
  }
  return d[b.length];
}
/**
 * @param {string} word
 * @param {Iterable<string>} candidates
 * @returns {string}
 */
export function suggest(word, candidates) {
  let best = '';
  let bestD = Infinity;
  for (const c of candidates) {
    const dist = levenshtein(word, c);
    if (dist < bestD) [best, bestD] = [c, dist];
  }
  return bestD <= Math.max(2, Math.floor(word.length / 3)) ? best : '';
}
