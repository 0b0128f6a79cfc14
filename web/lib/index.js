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

// Instantiates the core from a module the caller compiled (Emscripten's instantiateWasm hook):
// the page starts compiling trainmem.wasm before its own script has arrived (web/app/boot.js).
function fromModule(module) {
  if (!(module instanceof WebAssembly.Module)) {
    throw new TrainmemError('invalid_type', 'module', 'module must be a WebAssembly.Module');
  }
  let failed;
  const failure = new Promise((_, reject) => (failed = reject));
  return Promise.race([
    createTrainmemModule({
      instantiateWasm(imports, receive) {
        WebAssembly.instantiate(module, imports).then(
          (instance) => receive(instance, module),
          failed,
        );
        return {};
      },
    }),
    failure,
  ]);
}

/**
 * Loads the WebAssembly core (once; later calls return the same instance).
 * @param {{ module?: WebAssembly.Module | Promise<WebAssembly.Module> }} [options]
 *   module: the core's .wasm already compiled (or compiling); if the promise rejects, the
 *   core is loaded the usual way.
 * @returns {Promise<import('./index').Trainmem>}
 */
export function load(options) {
  if (!loading) {
    const given = options?.module;
    const created =
      given === undefined
        ? createTrainmemModule()
        : Promise.resolve(given).then(fromModule, () => createTrainmemModule());
    loading = created.then(makeApi, (e) => {
      loading = null;
      throw e;
    });
  }
  return loading;
}

export default { load, TrainmemError };
