// @ts-check
// Runs core calls. Light calls run on the main thread (microseconds); heavy ones go to a
// module Web Worker, so the page stays responsive and shows progress. A newer request
// cancels an older one (the worker is terminated and started afresh). Calls of tens of
// milliseconds (runLatest) have a second worker that stays alive between them.
/** @import { FunctionName, Trainmem } from '../lib/index.js' */
/** @import { CoreCall, PageError } from './types.js' */
import { TrainmemError } from '../lib/errors.js';
import { FULL_CORE_ONLY, fullCore } from './full-core.js';

/**
 * A call waiting for the worker, or computed by it.
 * @typedef {object} Job
 * @property {number} id
 * @property {CoreCall} fn
 * @property {object} request
 * @property {(result: unknown) => void} resolve
 * @property {(e: unknown) => void} reject
 * @property {string} channel
 */

/**
 * The core's error, as the worker posted it.
 * @param {PageError & { code: string, field: string, message: string }} error
 */
function errorOf({ code, field, message, minimumBudgetBytes, messages }) {
  return new TrainmemError(code, field, message, { minimumBudgetBytes, messages });
}

const cancelled = () => new TrainmemError('cancelled', '', 'cancelled');

/**
 * Every core call the page makes leaves a User Timing mark ("trainmem:call <fn>"), where it is
 * made: bench/page-update.mjs counts a keystroke's calls with them.
 * @param {CoreCall} fn
 */
export function markCall(fn) {
  try {
    performance.mark(`trainmem:call ${fn}`);
  } catch {
    /* marks unsupported */
  }
}

export class Solver {
  /** @param {Trainmem} tm */
  constructor(tm) {
    this.tm = tm;
    /** @type {Worker | null} */
    this.worker = null;
    /** @type {{ id: number, resolve: (r: unknown) => void, reject: (e: unknown) => void, fallback: () => void } | null} */
    this.pending = null;
    this.seq = 0;
    /** @type {Worker | null} runLatest's worker, kept between calls */
    this.quick = null;
    this.quickReady = false; // it has its core
    this.noQuick = false;
    /** @type {Job | null} the call it computes */
    this.busy = null;
    /** @type {Map<string, Job>} channel -> the newest call of that channel waiting for it */
    this.queued = new Map();
  }

  /**
   * @param {CoreCall} fn
   * @param {object} request
   * @returns {unknown} the function's result
   */
  run(fn, request) {
    markCall(fn);
    return /** @type {(request: object) => unknown} */ (this.tm[fn])(request);
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

  /**
   * Heavy call in the worker; resolves with the result, rejects with the core's error.
   * @param {CoreCall} fn
   * @param {object} request
   * @returns {Promise<unknown>}
   */
  runHeavy(fn, request) {
    this.cancel();
    if (!this.worker && !this.noWorker) this.startWorker();
    const id = ++this.seq;
    markCall(fn);
    const inline = () =>
      new Promise((ok, fail) =>
        setTimeout(async () => {
          try {
            const tm = FULL_CORE_ONLY.has(fn) ? await fullCore() : this.tm;
            ok(/** @type {(request: object) => unknown} */ (tm[fn])(request));
          } catch (e) {
            fail(e);
          }
        }, 30),
      );
    const worker = this.worker;
    if (!worker) return inline();
    return new Promise((resolve, reject) => {
      this.pending = {
        id,
        resolve,
        reject,
        fallback: () => inline().then(resolve, reject),
      };
      worker.postMessage({ id, fn, request });
    });
  }

  /**
   * A call of tens of milliseconds (the accumulation planner, the verdict's advise) in a worker
   * that stays alive, so that typing is not held up by it. While it computes, a newer call of the
   * same channel waits in line and an older waiting one of that channel is cancelled: the page
   * gets the answer to its latest request of each kind (the verdict's does not cancel a tab's).
   * Until that worker has its core (and where workers are unavailable), the call runs here.
   * @param {CoreCall} fn
   * @param {object} request
   * @param {string} [channel]
   * @param {{ waitForWorker?: boolean }} [options]
   * @returns {Promise<unknown>}
   */
  runLatest(fn, request, channel = 'tab', { waitForWorker = false } = {}) {
    this.dropQueued(channel);
    if (!this.quick && !this.noQuick) this.startQuick();
    // (a call that may wait for the worker to load its core queues for it instead)
    if (!this.quickReady && !(waitForWorker && this.quick)) {
      try {
        return Promise.resolve(this.run(fn, request));
      } catch (e) {
        return Promise.reject(e);
      }
    }
    return new Promise((resolve, reject) => {
      /** @type {Job} */
      const job = { id: ++this.seq, fn, request, resolve, reject, channel };
      if (this.busy || !this.quickReady) this.queued.set(channel, job);
      else this.post(job);
    });
  }

  startQuick() {
    try {
      const w = new Worker(new URL('./worker.js', import.meta.url), { type: 'module' });
      w.onmessage = (e) => {
        if (e.data.ready) {
          this.quickReady = true;
          const [first] = this.queued.values();
          if (first && !this.busy) {
            this.queued.delete(first.channel);
            this.post(first);
          }
          return;
        }
        const job = this.busy;
        if (!job || e.data.id !== job.id) return;
        this.busy = null;
        if (e.data.error) job.reject(errorOf(e.data.error));
        else job.resolve(e.data.result);
        const [next] = this.queued.values();
        if (next) {
          this.queued.delete(next.channel);
          this.post(next);
        }
      };
      w.onerror = (e) => {
        // The worker failed: its calls, and all later ones, are answered here.
        this.quick = null;
        this.quickReady = false;
        this.noQuick = true;
        const jobs = /** @type {Job[]} */ ([this.busy, ...this.queued.values()].filter(Boolean));
        this.busy = null;
        this.queued.clear();
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

  /** @param {Job} job */
  post(job) {
    this.busy = job;
    markCall(job.fn);
    /** @type {Worker} */ (this.quick).postMessage({
      id: job.id,
      fn: job.fn,
      request: job.request,
    });
  }

  /**
   * Cancels the call of a channel waiting for the worker (every channel's without one).
   * @param {string} [channel]
   */
  dropQueued(channel) {
    for (const [c, job] of [...this.queued]) {
      if (channel !== undefined && c !== channel) continue;
      job.reject(cancelled());
      this.queued.delete(c);
    }
  }

  /**
   * Stops runLatest's call of one channel (the waiting one too), e.g. a long planner run; the
   * worker computing it is ended and started afresh for the calls of other channels in line.
   */
  cancelLatest(channel = 'tab') {
    this.dropQueued(channel);
    if (!this.busy || this.busy.channel !== channel) return;
    this.busy.reject(cancelled());
    this.busy = null;
    this.quick?.terminate();
    this.quick = null;
    this.quickReady = false;
    if (this.queued.size > 0 && !this.noQuick) this.startQuick();
  }

  cancel() {
    this.dropQueued('tab');
    if (this.pending) {
      this.pending.reject(cancelled());
      this.pending = null;
      this.worker?.terminate();
      this.worker = null;
    }
  }
}
