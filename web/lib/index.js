// trainmem: JavaScript wrapper over the WebAssembly core. One JSON string crosses the
// boundary each way; errors come back as data and are thrown here as TrainmemError.
import createTrainmemModule from './wasm/trainmem_wasm.mjs';
import { TrainmemError } from './errors.js';

export { TrainmemError };

const FUNCTIONS = {
  checkpointSize: 'checkpointSize',
  describeModel: 'describeModel',
  peakMemory: 'peakMemory',
  accumulation: 'accumulation',
  placement: 'placement',
  presets: 'presets',
};

function makeApi(module) {
  const call = (name, request) => {
    let text;
    try {
      text = JSON.stringify(request === undefined ? {} : request);
    } catch (e) {
      throw new TrainmemError('invalid_json', '', `request cannot be serialised: ${e.message}`);
    }
    if (typeof text !== 'string') {
      throw new TrainmemError('invalid_type', '', 'request must be an object');
    }
    const envelope = JSON.parse(module.call(name, text));
    if (!envelope.ok) {
      const { code, field, message } = envelope.error;
      throw new TrainmemError(code, field, message, envelope.error);
    }
    return envelope.result;
  };
  const api = { version: module.version(), call };
  for (const [method, name] of Object.entries(FUNCTIONS)) {
    api[method] = (request) => call(name, request);
  }
  return Object.freeze(api);
}

let loading = null;

/**
 * Loads the WebAssembly core (once; later calls return the same instance).
 * @returns {Promise<import('./index').Trainmem>}
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
