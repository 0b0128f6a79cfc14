// Seeded choices and paths into a JSON request, for the generators that mutate requests: tools/differential.mjs
// (old module against new) and tests/js/stress.test.js (bounded fuzzing of the module).
// `chance(p)` and `pick(xs)` come from the caller's seeded generator, so each stays
// reproducible from its own seed.

// A seeded generator (mulberry32: small, good enough to pick mutations) and its helpers.
export function seeded(seed) {
  let a = seed;
  const rand = () => {
    a = (a + 0x6d2b79f5) >>> 0;
    let t = a;
    t = Math.imul(t ^ (t >>> 15), t | 1);
    t ^= t + Math.imul(t ^ (t >>> 7), t | 61);
    return ((t ^ (t >>> 14)) >>> 0) / 4294967296;
  };
  return {
    rand,
    /** @type {<T>(xs: T[]) => T} */
    pick: (xs) => xs[Math.floor(rand() * xs.length)],
    chance: (p) => rand() < p,
  };
}

export const isPlain = (v) =>
  v !== null && typeof v === 'object' && Object.getPrototypeOf(v) === Object.prototype;
export const isNode = (v) => Array.isArray(v) || isPlain(v);

/**
 * @param {{ chance: (p: number) => boolean, pick: <T>(xs: T[]) => T, stop: number }} random
 *   `stop`: the probability of ending the path at each level below the root.
 */
export function requestPaths({ chance, pick, stop }) {
  // A random path from the root: at each level stop with probability `stop`, else step into a
  // random child. `wantObject`: end on a plain object (the last one seen on the way).
  function randomPath(root, wantObject = false) {
    const path = [];
    let v = root;
    let lastObject = isPlain(root) ? [] : null;
    while (isNode(v)) {
      const keys = Object.keys(v);
      if (keys.length === 0 || (path.length > 0 && chance(stop))) break;
      const k = pick(keys);
      path.push(Array.isArray(v) ? Number(k) : k);
      v = v[k];
      if (isPlain(v)) lastObject = [...path];
    }
    return wantObject ? lastObject : path;
  }
  return { randomPath };
}

// Copy-on-path update: shares every subtree off the path, so that mutating a large request
// costs its depth, not its size. `value` undefined deletes the key (or array element).
export function updateAt(root, path, value) {
  if (path.length === 0) return value;
  const [k, ...rest] = path;
  const copy = Array.isArray(root) ? [...root] : { ...root };
  if (rest.length === 0 && value === undefined) {
    if (Array.isArray(copy)) copy.splice(k, 1);
    else delete copy[k];
  } else {
    copy[k] = updateAt(root[k], rest, value);
  }
  return copy;
}

export const getAt = (root, path) => path.reduce((v, k) => v[k], root);
