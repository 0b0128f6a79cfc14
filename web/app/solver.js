// @ts-check
// Runs core calls. Light calls run on the main thread (microseconds); heavy ones go to a
// module Web Worker, so the page stays responsive and shows progress. A newer request
// cancels an older one (the worker is terminated and started afresh). Calls of tens of
// milliseconds (runLatest) have a second worker that stays alive between them.
import { TrainmemError } from '../lib/errors.js';
import { FULL_CORE_ONLY, fullCore } from './full-core.js';

/** The core's error, as the worker posted it. */
function errorOf({ code, field, message, minimumBudgetBytes }) {
  return new TrainmemError(code, field, message, { minimumBudgetBytes });
}

const cancelled = () => new TrainmemError('cancelled', '', 'cancelled');

export class Solver {
  constructor(tm) {
    this.tm = tm;
    this.worker = null;
    this.pending = null;
    this.seq = 0;
    this.quick = null; // runLatest's worker, kept between calls
    this.quickReady = false; // it has its core
    this.noQuick = false;
    this.busy = null; // the call it computes: { id, fn, request, resolve, reject }
    this.queued = null; // the newest call waiting for it
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
        if (e.data.error) p.reject(errorOf(e.data.error));
        else p.resolve(e.data.result);
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

  /**
   * A call of tens of milliseconds (the accumulation planner) in a worker that stays alive, so
   * that typing is not held up by it. While it computes, a newer call waits in line and an
   * older waiting one is cancelled: the page gets the answer to its latest request. Until that
   * worker has its core (and where workers are unavailable), the call runs here.
   */
  runLatest(fn, request) {
    this.dropQueued();
    if (!this.quick && !this.noQuick) this.startQuick();
    if (!this.quickReady) {
      try {
        return Promise.resolve(this.run(fn, request));
      } catch (e) {
        return Promise.reject(e);
      }
    }
    return new Promise((resolve, reject) => {
      const job = { id: ++this.seq, fn, request, resolve, reject };
      if (this.busy) this.queued = job;
      else this.post(job);
    });
  }

  startQuick() {
    try {
      const w = new Worker(new URL('./worker.js', import.meta.url), { type: 'module' });
      w.onmessage = (e) => {
        if (e.data.ready) {
          this.quickReady = true;
          return;
        }
        const job = this.busy;
        if (!job || e.data.id !== job.id) return;
        this.busy = null;
        if (e.data.error) job.reject(errorOf(e.data.error));
        else job.resolve(e.data.result);
        const next = this.queued;
        this.queued = null;
        if (next) this.post(next);
      };
      w.onerror = (e) => {
        // The worker failed: its calls, and all later ones, are answered here.
        this.quick = null;
        this.quickReady = false;
        this.noQuick = true;
        const jobs = [this.busy, this.queued].filter(Boolean);
        this.busy = this.queued = null;
        for (const j of jobs) {
          try {
            j.resolve(this.run(j.fn, j.request));
          } catch (err) {
            j.reject(err);
          }
        }
        e.preventDefault?.();
      };
      this.quick = w;
    } catch {
      this.noQuick = true; // e.g. embedded from another origin: workers must be same-origin
    }
  }

  post(job) {
    this.busy = job;
    this.quick.postMessage({ id: job.id, fn: job.fn, request: job.request });
  }

  dropQueued() {
    this.queued?.reject(cancelled());
    this.queued = null;
  }

  /** Stops runLatest's call in progress; its worker is started afresh for the next call. */
  cancelLatest() {
    this.dropQueued();
    if (!this.busy) return;
    this.busy.reject(cancelled());
    this.busy = null;
    this.quick?.terminate();
    this.quick = null;
    this.quickReady = false;
  }

  cancel() {
    this.dropQueued();
    if (this.pending) {
      this.pending.reject(cancelled());
      this.pending = null;
      this.worker?.terminate();
      this.worker = null;
    }
  }
}
