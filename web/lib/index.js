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
  if (typeof value === 'string' || value instanceof Uint8Array) return value;
  if (value instanceof ArrayBuffer) return new Uint8Array(value);
  if (ArrayBuffer.isView(value)) {
    return new Uint8Array(value.buffer, value.byteOffset, value.byteLength);
  }
  throw new TrainmemError('invalid_type', field, `${field} must be a Uint8Array or an ArrayBuffer`);
}

function makeApi(module) {
  const invoke = (name, request, bytes) => {
    let text;
    try {
      // a string is the request's JSON text, read by the core's strict reader as it is
      text =
        typeof request === 'string'
          ? request
          : JSON.stringify(request === undefined ? {} : request);
    } catch (e) {
      throw new TrainmemError('invalid_json', '', `request cannot be serialised: ${e.message}`);
    }
    if (typeof text !== 'string') {
      throw new TrainmemError('invalid_type', '', 'request must be an object');
    }
    const out = bytes === undefined ? module.call(name, text) : module.callBytes(name, text, bytes);
    const envelope = JSON.parse(out);
    if (!envelope.ok) {
      const { code, field, message } = envelope.error;
      throw new TrainmemError(code, field, message, envelope.error);
    }
    return envelope.result;
  };
  const call = (name, request) => invoke(name, request);
  const api = { version: module.version(), call };
  // One method per function of the core, as the core lists them (its `vocabulary` function).
  for (const name of invoke('vocabulary', {}).functions) {
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
  return loading;
}

export default { load, TrainmemError };
