// @ts-check
// trainmem: JavaScript wrapper over the WebAssembly core. One JSON string crosses the
// boundary each way (plus, for the snapshot reader, the file's bytes, and for a placement
// chain in columnar form, its numbers as one Float64Array); errors come back as data and are
// thrown here as TrainmemError.
import createTrainmemModule from './wasm/trainmem_wasm.mjs';
import { TrainmemError } from './errors.js';

export { TrainmemError };

// Functions that read a file's bytes beside their request: their methods take the bytes.
const BYTES_FUNCTIONS = ['readSnapshot', 'compareSnapshot'];

// A file's bytes as Embind's std::string takes them (Uint8Array; a JS string is sent as UTF-8).
/**
 * @param {unknown} value
 * @param {string} field
 * @returns {Uint8Array | string}
 */
function toBytes(value, field) {
  if (value === undefined || value === null) return new Uint8Array(0);
  if (typeof value === 'string') return value;
  try {
    if (value instanceof Uint8Array)
      return new Uint8Array(value.buffer, value.byteOffset, value.length);
    if (value instanceof ArrayBuffer) return new Uint8Array(value);
    if (ArrayBuffer.isView(value)) {
      return new Uint8Array(value.buffer, value.byteOffset, value.byteLength);
    }
  } catch (/** @type {any} */ e) {
    // a buffer transferred to a worker (detached) cannot be viewed
    throw new TrainmemError(
      'invalid_type',
      field,
      `${field}: its buffer cannot be read (${e.message})`,
    );
  }
  throw new TrainmemError('invalid_type', field, `${field} must be a Uint8Array or an ArrayBuffer`);
}

// The first number of a request that JSON cannot carry (NaN, Infinity): JSON.stringify would
// write null in its place, far from the cause. [path, value] in the core's path notation
// (`chain.layers[3].savedBytes`), or null. Iterative: a request may be deeply nested.
/**
 * @param {object} request
 * @returns {[string, number] | null}
 */
function nonFinite(request) {
  /** @type {[any, string][]} */
  const stack = [[request, '']];
  const seen = new Set();
  while (stack.length) {
    const [v, path] = /** @type {[any, string]} */ (stack.pop());
    if (typeof v === 'number') {
      if (!Number.isFinite(v)) return [path, v];
      continue;
    }
    if (v === null || typeof v !== 'object' || seen.has(v) || ArrayBuffer.isView(v)) continue;
    seen.add(v);
    if (typeof v.toJSON === 'function') continue; // written by its own method
    if (Array.isArray(v)) {
      for (let i = v.length - 1; i >= 0; i--) stack.push([v[i], `${path}[${i}]`]);
    } else {
      const keys = Object.keys(v);
      for (let i = keys.length - 1; i >= 0; i--) {
        stack.push([v[keys[i]], path ? `${path}.${keys[i]}` : keys[i]]);
      }
    }
  }
  return null;
}

// The request as JSON text, or a TrainmemError: a string is the request's JSON text, read by
// the core's strict reader as it is; longer than the core's limit (16 MiB of UTF-8, which is
// at least one byte per UTF-16 unit), it is refused before it is copied into the module.
/**
 * @param {unknown} request
 * @param {number} maxBytes
 * @returns {string}
 */
function requestText(request, maxBytes) {
  let text;
  if (typeof request === 'string') {
    text = request;
  } else {
    // JSON.stringify writes every non-finite number as null, so a text without "null" holds
    // none and the request is not walked (a 100,000-layer chain: the walk took longer than the
    // core's whole answer); with "null" in it, or when it cannot be written, nonFinite names
    // the first such number.
    /** @type {any} */
    let failure = null;
    try {
      text = JSON.stringify(request === undefined ? {} : request);
    } catch (/** @type {any} */ e) {
      failure = e;
    }
    const walk = failure !== null || (typeof text === 'string' && text.includes('null'));
    const bad = walk && request !== null && typeof request === 'object' ? nonFinite(request) : null;
    if (bad) {
      const [path, value] = bad;
      throw new TrainmemError(
        'invalid_number',
        path,
        `${path || 'request'} is ${value}: a number in a request must be finite`,
      );
    }
    if (failure !== null) {
      throw new TrainmemError(
        'invalid_json',
        '',
        `request cannot be serialised: ${failure.message}`,
      );
    }
  }
  if (typeof text !== 'string') {
    throw new TrainmemError('invalid_type', '', 'request must be an object');
  }
  if (text.length > maxBytes) {
    throw new TrainmemError(
      'too_large',
      '',
      `request is larger than ${maxBytes / 2 ** 20} MiB (${text.length} characters)`,
    );
  }
  return text;
}

// The numeric columns of a placement chain in columnar form (`chain.layers` an object of
// arrays): each a typed array or an array of numbers, all of one length, they cross into the
// core as one Float64Array beside a request that holds the rest, so that a 100,000-layer
// chain's numbers are never written as JSON text nor read back from it.
const NUMERIC_COLUMNS = [
  'forwardCost',
  'backwardCost',
  'outputBytes',
  'savedBytes',
  'forwardTempBytes',
  'backwardTempBytes',
];

/**
 * @param {unknown} v
 * @returns {v is ArrayLike<number>}
 */
function isNumbers(v) {
  if (ArrayBuffer.isView(v))
    return !(v instanceof DataView || v instanceof BigInt64Array || v instanceof BigUint64Array);
  if (!Array.isArray(v)) return false;
  for (let i = 0; i < v.length; i++) if (typeof v[i] !== 'number') return false;
  return true;
}

// { request, names, values } for a request with such columns (names null: columns of
// different lengths, sent as JSON arrays for the core to name the mismatch), else null.
/**
 * @param {unknown} request
 * @returns {{ request: object, names: string[], values: Float64Array }
 *   | { request: object, names: null, values?: undefined } | null}
 */
function layerColumns(request) {
  /** @type {(v: unknown) => Record<string, unknown> | null} */
  const asObject = (v) =>
    v !== null && typeof v === 'object' ? /** @type {Record<string, unknown>} */ (v) : null;
  const req = asObject(request);
  const chain = asObject(req?.chain);
  const raw = chain?.layers;
  if (raw === null || typeof raw !== 'object' || Array.isArray(raw)) return null;
  if (ArrayBuffer.isView(raw)) return null;
  // (read as columns of numbers: `names` keeps those that are)
  const layers = /** @type {Record<string, ArrayLike<number>>} */ (raw);
  const names = NUMERIC_COLUMNS.filter((k) => Object.hasOwn(layers, k) && isNumbers(layers[k]));
  if (names.length === 0) return null;
  /** @type {Record<string, unknown>} */
  const rest = { ...layers };
  const n = layers[names[0]].length;
  if (names.some((k) => layers[k].length !== n)) {
    for (const k of names) rest[k] = Array.from(layers[k]);
    return { request: { ...req, chain: { ...chain, layers: rest } }, names: null };
  }
  const values = new Float64Array(n * names.length);
  names.forEach((k, j) => {
    values.set(layers[k], j * n);
    delete rest[k];
  });
  return { request: { ...req, chain: { ...chain, layers: rest } }, names, values };
}

const encoder = new TextEncoder();

/**
 * The Embind module's functions (cpp/src/wasm): JSON text in, an envelope's JSON text out.
 * @typedef {object} CoreModule
 * @property {() => string} version
 * @property {(name: string, text: Uint8Array) => string} call
 * @property {(name: string, text: Uint8Array, bytes: Uint8Array | string) => string} callBytes
 * @property {(name: string, text: Uint8Array, names: string, values: Float64Array) => string} callColumns
 * @property {(text: Uint8Array) => string} parseJson
 */

/**
 * @param {CoreModule} module
 * @returns {import('./index.js').Trainmem}
 */
function makeApi(module) {
  let maxBytes = 16 * 2 ** 20; // until the core's vocabulary says (limits.requestBytes)
  /**
   * @param {unknown} name
   * @param {unknown} request
   * @param {Uint8Array | string} [bytes]
   * @returns {unknown} the result, JSON from the core (typed by the Trainmem method that returns it)
   */
  const invoke = (name, request, bytes) => {
    if (typeof name !== 'string') {
      throw new TrainmemError(
        'invalid_type',
        '',
        `the function name must be a string, got ${typeof name}`,
      );
    }
    const columns = name === 'placement' && bytes === undefined ? layerColumns(request) : null;
    const sent = columns ? columns.request : request;
    const text = encoder.encode(requestText(sent, maxBytes)); // UTF-8, natively
    if (columns?.names && text.length + columns.values.byteLength > maxBytes) {
      throw new TrainmemError(
        'too_large',
        'chain.layers',
        `request is larger than ${maxBytes / 2 ** 20} MiB (chain.layers: ${columns.values.byteLength} bytes of numbers)`,
      );
    }
    let out;
    try {
      if (columns?.names)
        out = module.callColumns(name, text, columns.names.join(','), columns.values);
      else
        out = bytes === undefined ? module.call(name, text) : module.callBytes(name, text, bytes);
    } catch (/** @type {any} */ e) {
      // Embind's own checks (a value it cannot convert) and a heap that cannot grow: never
      // left as a foreign error (the core itself returns every error as data).
      const grow = /memory|allocat/i.test(String(e && e.message));
      throw new TrainmemError(
        grow ? 'too_large' : 'internal',
        '',
        `the core could not be called: ${e && e.message}`,
      );
    }
    const envelope = JSON.parse(out);
    if (!envelope.ok) {
      const { code, field, message } = envelope.error;
      throw new TrainmemError(code, field, message, envelope.error);
    }
    return envelope.result;
  };
  /** @type {(name: unknown, request: unknown) => unknown} */
  const call = (name, request) => invoke(name, request);
  // JSON text through the core's strict reader (duplicate keys, depth, size, numbers beyond a
  // double): what the CLI reads its files with.
  /** @type {(text: unknown) => unknown} */
  const parseJson = (text) => {
    if (typeof text !== 'string') {
      throw new TrainmemError('invalid_type', '', `JSON text must be a string, got ${typeof text}`);
    }
    const envelope = JSON.parse(module.parseJson(encoder.encode(requestText(text, maxBytes))));
    if (!envelope.ok) {
      const { code, field, message } = envelope.error;
      throw new TrainmemError(code, field, message, envelope.error);
    }
    return envelope.result;
  };
  /** @type {Record<string, unknown>} the Trainmem interface, method by method */
  const api = { version: module.version(), call, parseJson };
  // One method per function of the core, as the core lists them (its `vocabulary` function).
  const vocabulary = /** @type {import('./index.js').Vocabulary} */ (invoke('vocabulary', {}));
  maxBytes = vocabulary.limits.requestBytes;
  for (const name of vocabulary.functions) {
    if (!BYTES_FUNCTIONS.includes(name))
      api[name] = (/** @type {unknown} */ request) => call(name, request);
  }
  api.readSnapshot = (/** @type {unknown} */ bytes, /** @type {unknown} */ options) =>
    invoke('readSnapshot', options === undefined ? {} : options, toBytes(bytes, 'snapshot'));
  api.compareSnapshot = (/** @type {unknown} */ request) => {
    if (request === null || typeof request !== 'object' || Array.isArray(request)) {
      throw new TrainmemError('invalid_type', '', 'request must be an object');
    }
    const { snapshot, ...rest } = /** @type {{ snapshot?: unknown }} */ (request);
    return invoke('compareSnapshot', rest, toBytes(snapshot, 'snapshot'));
  };
  // (the methods set above by name, as the core lists its functions)
  return /** @type {import('./index.js').Trainmem} */ (/** @type {unknown} */ (Object.freeze(api)));
}

/** @type {Promise<import('./index.js').Trainmem> | null} */
let loading = null;

/**
 * Loads the WebAssembly core (once; later calls return the same instance).
 * @returns {Promise<import('./index.js').Trainmem>}
 */
export function load() {
  if (!loading) {
    loading = createTrainmemModule().then(makeApi, (/** @type {unknown} */ e) => {
      loading = null;
      throw e;
    });
  }
  return /** @type {Promise<import('./index.js').Trainmem>} */ (loading);
}

export default { load, TrainmemError };
