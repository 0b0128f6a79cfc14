// @ts-check
// trainmem: JavaScript wrapper over the WebAssembly core. One JSON string crosses the
// boundary each way (plus, for the snapshot reader, the file's bytes); errors come back as
// data and are thrown here as TrainmemError.
import createTrainmemModule from './wasm/trainmem_wasm.mjs';
import { TrainmemError } from './errors.js';

export { TrainmemError };

// Functions that read a file's bytes beside their request: their methods take the bytes.
const BYTES_FUNCTIONS = ['readSnapshot', 'compareSnapshot'];

// A file's bytes as Embind's std::string takes them (Uint8Array; a JS string is sent as UTF-8).
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
/** @returns {[string, number] | null} */
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

const encoder = new TextEncoder();

function makeApi(module) {
  let maxBytes = 16 * 2 ** 20; // until the core's vocabulary says (limits.requestBytes)
  const invoke = (name, request, bytes) => {
    if (typeof name !== 'string') {
      throw new TrainmemError(
        'invalid_type',
        '',
        `the function name must be a string, got ${typeof name}`,
      );
    }
    const text = encoder.encode(requestText(request, maxBytes)); // UTF-8, natively
    let out;
    try {
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
  const call = (name, request) => invoke(name, request);
  // JSON text through the core's strict reader (duplicate keys, depth, size, numbers beyond a
  // double): what the CLI reads its files with.
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
  const api = { version: module.version(), call, parseJson };
  // One method per function of the core, as the core lists them (its `vocabulary` function).
  const vocabulary = invoke('vocabulary', {});
  maxBytes = vocabulary.limits.requestBytes;
  for (const name of vocabulary.functions) {
    if (!BYTES_FUNCTIONS.includes(name)) api[name] = (request) => call(name, request);
  }
  api.readSnapshot = (bytes, options) =>
    invoke('readSnapshot', options === undefined ? {} : options, toBytes(bytes, 'snapshot'));
  api.compareSnapshot = (request) => {
    if (request === null || typeof request !== 'object' || Array.isArray(request)) {
      throw new TrainmemError('invalid_type', '', 'request must be an object');
    }
    const { snapshot, ...rest } = request;
    return invoke('compareSnapshot', rest, toBytes(snapshot, 'snapshot'));
  };
  return Object.freeze(api);
}

/** @type {Promise<import('./index.js').Trainmem> | null} */
let loading = null;

/**
 * Loads the WebAssembly core (once; later calls return the same instance).
 * @returns {Promise<import('./index.js').Trainmem>}
 */
export function load() {
  if (!loading) {
    loading = createTrainmemModule().then(makeApi, (e) => {
      loading = null;
      throw e;
    });
  }
  return /** @type {Promise<import('./index.js').Trainmem>} */ (loading);
}

export default { load, TrainmemError };
