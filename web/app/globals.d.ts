// Types for the type check of web/app (tests/js/checkjs.test.js) that its JavaScript cannot
// declare itself: a name the page's bundler defines, and the service worker's scope.

/**
 * The model and GPU pickers' ids and display names (a model's Hub id, a GPU's memory and bf16
 * support), read from cpp/data at page build time
 * (tools/build-page.mjs, esbuild `define`). Unbundled, the name is undeclared at run time and
 * the page asks the core instead (app.js loadPresets).
 */
declare const __TRAINMEM_PRESET_INDEX__:
  | {
      models: Array<{ id: string; name: string; modelType: string; hub?: string }>;
      gpus: Array<{ id: string; name: string; memoryBytes: number; bf16: boolean }>;
    }
  | undefined;

// The parts of the service worker's scope that sw.js uses (lib.webworker's types cannot be
// loaded beside the DOM's in one check).
interface SwExtendableEvent extends Event {
  waitUntil(p: Promise<unknown>): void;
}
interface SwFetchEvent extends SwExtendableEvent {
  request: Request;
  preloadResponse: Promise<Response | undefined>;
  respondWith(r: Response | Promise<Response>): void;
}
interface SwScope {
  registration: { scope: string; navigationPreload?: { enable(): Promise<void> } };
  clients: { claim(): Promise<void> };
  skipWaiting(): Promise<void>;
  addEventListener(type: string, listener: (event: any) => void): void;
}
