// @ts-check
// Runs core calls. Light calls run on the main thread (microseconds); heavy ones go to a
// module Web Worker, so the page stays responsive and shows progress. A newer request
// cancels an older one (the worker is terminated and started afresh).
import { TrainmemError } from '../lib/errors.js';
import { FULL_CORE_ONLY, fullCore } from './full-core.js';

export class Solver {
  constructor(tm) {
    this.tm = tm;
    this.worker = null;
    this.pending = null;
    this.seq = 0;
  }

  run(fn, request) {
    return this.tm[fn](request);
  }

  startWorker() {
    try {
      this.worker = new Worker(new URL('./worker.js', import.meta.url), { type: 'module' });
      this.worker.onmessage = (e) => {
        const p = this.pending;
        if (!p || e.data.id !== p.id) return;
        this.pending = null;
        if (e.data.error) {
          const { code, field, message, minimumBudgetBytes } = e.data.error;
          p.reject(new TrainmemError(code, field, message, { minimumBudgetBytes }));
        } else p.resolve(e.data.result);
      };
      this.worker.onerror = (e) => {
        const p = this.pending;
        this.pending = null;
        this.worker = null;
        if (p) p.fallback();
        e.preventDefault?.();
      };
    } catch {
      this.worker = null; // e.g. embedded from another origin: workers must be same-origin
      this.noWorker = true;
    }
  }

  /** Heavy call in the worker; resolves with the result, rejects with the core's error. */
  runHeavy(fn, request) {
    this.cancel();
    if (!this.worker && !this.noWorker) this.startWorker();
    const id = ++this.seq;
    const inline = () =>
      new Promise((ok, fail) =>
        setTimeout(async () => {
          try {
            const tm = FULL_CORE_ONLY.has(fn) ? await fullCore() : this.tm;
            ok(tm[fn](request));
          } catch (e) {
            fail(e);
          }
        }, 30),
      );
    if (!this.worker) return inline();
    return new Promise((resolve, reject) => {
      this.pending = {
        id,
        resolve,
        reject,
        fallback: () => inline().then(resolve, reject),
      };
      this.worker.postMessage({ id, fn, request });
    });
  }

  cancel() {
    if (this.pending) {
      this.pending.reject(new TrainmemError('cancelled', '', 'cancelled'));
      this.pending = null;
      this.worker?.terminate();
      this.worker = null;
    }
  }
}
