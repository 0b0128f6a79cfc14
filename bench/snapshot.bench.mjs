// Benchmark (not a test): a ~200 MB synthetic memory snapshot read by the WASM core under Node
// (tm.readSnapshot), with time, peak RSS and the WASM heap. Run after `bash tools/build.sh wasm`:
//   node bench/snapshot.bench.mjs [MB]        (default 200)
//   node bench/snapshot.bench.mjs FILE.pickle (a file written elsewhere, e.g. 665 MB)
//   node bench/snapshot.bench.mjs crafted     (3.8 KB of memo indices 65,536 apart: the heap it
//                                              takes; 437 MB before the reader's budget)
// TRAINMEM_LIB=/path/to/index.js times another build of the module (e.g. main's, "before").
// Goal: <= 3 s for 200 MB, bounded memory. Results: bench/RESULTS.md ("Snapshot reader").
//
// The file is written here the way CPython's pickle.dump (protocol 4, the default of Python
// 3.8-3.13, as torch.cuda.memory._dump_snapshot calls it) lays out such data: every new str,
// list and dict memoised (MEMOIZE) and reused with BINGET / LONG_BINGET, lists and dicts filled
// in batches of 1,000 (MARK … APPENDS / SETITEMS), ints as BININT1 / BININT / LONG1. The schema
// is torch/csrc/cuda/memory_snapshot.cpp's: trace entries {action, addr, size, stream, frames,
// time_us}, a new frames list per entry whose frame dicts are shared. With /usr/bin/python3 the
// writer is checked first: Python's pickle.loads of a small file gives the same data.
import { execFileSync } from 'node:child_process';
import { existsSync, readFileSync, writeFileSync, mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';

class Writer {
  constructor(size) {
    this.buf = Buffer.allocUnsafe(size);
    this.n = 0;
    this.memo = 0;
    this.strings = new Map();
  }
  byte(b) {
    this.buf[this.n++] = b;
  }
  u32(v) {
    this.buf.writeUInt32LE(v, this.n);
    this.n += 4;
  }
  get(i) {
    if (i < 256) {
      this.byte(0x68); // BINGET
      this.byte(i);
    } else {
      this.byte(0x6a); // LONG_BINGET
      this.u32(i);
    }
  }
  memoize() {
    this.byte(0x94);
    return this.memo++;
  }
  str(s) {
    const m = this.strings.get(s);
    if (m !== undefined) return this.get(m);
    const b = Buffer.from(s, 'utf8');
    this.byte(0x8c); // SHORT_BINUNICODE (all our strings are < 256 bytes)
    this.byte(b.length);
    b.copy(this.buf, this.n);
    this.n += b.length;
    this.strings.set(s, this.memoize());
  }
  int(v) {
    if (v >= 0 && v < 256) {
      this.byte(0x4b); // BININT1
      this.byte(v);
    } else if (v >= -(2 ** 31) && v < 2 ** 31) {
      this.byte(0x4a); // BININT
      this.buf.writeInt32LE(v, this.n);
      this.n += 4;
    } else {
      // LONG1: two's complement, little-endian, minimal length (+ a sign byte when needed)
      let x = BigInt(v);
      const bytes = [];
      while (true) {
        bytes.push(Number(x & 0xffn));
        x >>= 8n;
        const top = bytes[bytes.length - 1] & 0x80;
        if ((x === 0n && !top) || (x === -1n && top)) break;
      }
      this.byte(0x8a);
      this.byte(bytes.length);
      for (const b of bytes) this.byte(b);
    }
  }
}

// One step: forward allocations (model frames), backward (autograd frames), optimizer
// (torch/optim frames), with frees; addresses from a simple bump-and-reuse scheme.
function* events(count) {
  const base = 0x7f0000000000;
  let t = 0;
  let next = 0;
  const free = [];
  const live = [];
  let i = 0;
  while (i < count) {
    for (const [phase, n, size] of [
      ['forward', 40, 8 << 20],
      ['backward', 40, 4 << 20],
      ['optimizer', 20, 1 << 20],
    ]) {
      for (let k = 0; k < n && i < count; k++, i++) {
        const addr = free.pop() ?? base + (next++ << 24);
        live.push([addr, size + k * 512, phase]);
        yield { action: 'alloc', addr, size: size + k * 512, phase, t: t++ };
      }
      while (live.length > 30 && i < count) {
        const [addr, size, ph] = live.shift();
        free.push(addr);
        i++;
        yield { action: 'free_requested', addr, size, phase: ph, t: t++ };
      }
    }
  }
}

const STACKS = {
  forward: [
    ['torch/nn/functional.py', 1848, 'linear'],
    ['torch/nn/modules/linear.py', 114, 'forward'],
    ['torch/nn/modules/module.py', 1501, '_call_impl'],
    ['transformers/models/gpt2/modeling_gpt2.py', 390, 'forward'],
    ['train.py', 42, 'train_step'],
    ['train.py', 80, 'main'],
  ],
  backward: [
    ['torch/autograd/__init__.py', 200, 'backward'],
    ['torch/_tensor.py', 487, 'backward'],
    ['train.py', 44, 'train_step'],
    ['train.py', 80, 'main'],
  ],
  optimizer: [
    ['torch/optim/adamw.py', 300, '_single_tensor_adamw'],
    ['torch/optim/adamw.py', 180, 'step'],
    ['torch/optim/optimizer.py', 280, 'wrapper'],
    ['train.py', 45, 'train_step'],
    ['train.py', 80, 'main'],
  ],
};

function write(count) {
  const w = new Writer(count * 200 + (1 << 20));
  const frameMemo = new Map();
  w.byte(0x80);
  w.byte(4);
  w.byte(0x7d); // EMPTY_DICT
  w.memoize();
  w.byte(0x28); // MARK
  w.str('segments');
  w.byte(0x5d); // EMPTY_LIST (no segments: the state at the end is empty)
  w.memoize();
  w.str('device_traces');
  w.byte(0x5d);
  w.memoize();
  w.byte(0x5d); // the device's trace
  w.memoize();
  let inBatch = 0;
  for (const e of events(count)) {
    if (inBatch === 0) w.byte(0x28);
    w.byte(0x7d);
    w.memoize();
    w.byte(0x28);
    w.str('action');
    w.str(e.action);
    w.str('addr');
    w.int(e.addr);
    w.str('size');
    w.int(e.size);
    w.str('stream');
    w.int(0);
    w.str('frames');
    w.byte(0x5d);
    w.memoize();
    w.byte(0x28);
    for (const [file, line, name] of STACKS[e.phase]) {
      const key = `${file}:${line}:${name}`;
      const m = frameMemo.get(key);
      if (m !== undefined) {
        w.get(m);
        continue;
      }
      w.byte(0x7d);
      frameMemo.set(key, w.memoize());
      w.byte(0x28);
      w.str('filename');
      w.str(file);
      w.str('line');
      w.int(line);
      w.str('name');
      w.str(name);
      w.byte(0x75); // SETITEMS
    }
    w.byte(0x65); // APPENDS (the frames)
    w.str('time_us');
    w.int(1700000000000000 + e.t);
    w.byte(0x75);
    if (++inBatch === 1000) {
      w.byte(0x65);
      inBatch = 0;
    }
  }
  if (inBatch) w.byte(0x65);
  w.byte(0x61); // APPEND the trace to device_traces
  w.byte(0x75); // SETITEMS of the top dict
  w.byte(0x2e); // STOP
  return w.buf.subarray(0, w.n);
}

const { load } = await import(process.env.TRAINMEM_LIB || '../web/lib/index.js');
const tm = await load();

if (process.argv[2] === 'crafted') {
  // PROTO 4, NONE, then 760 LONG_BINPUTs of it at indices 65,536 apart, STOP: 3,804 bytes.
  const b = [0x80, 4, 0x4e];
  for (let i = 0; i < 760; i++) {
    const at = i * 65536;
    b.push(0x72, at & 0xff, (at >> 8) & 0xff, (at >> 16) & 0xff, at >>> 24);
  }
  b.push(0x2e);
  const file = Uint8Array.from(b);
  // the module itself (not the wrapper), to read the size of its heap after the call
  const wasm = (process.env.TRAINMEM_LIB || '../web/lib/index.js').replace(
    /index\.js$/,
    'wasm/trainmem_wasm.mjs',
  );
  const m = await (await import(wasm)).default();
  const heap0 = m.HEAP8.length;
  const t0 = performance.now();
  const out = JSON.parse(m.callBytes('readSnapshot', '{}', file));
  const what = out.ok
    ? 'read'
    : `${out.error.code} on ${out.error.field}: ${out.error.message.slice(0, 80)}`;
  console.log(
    `crafted ${file.length} B file: ${what}; ${(performance.now() - t0).toFixed(1)} ms; ` +
      `WebAssembly heap ${(heap0 / 2 ** 20).toFixed(0)} -> ${(m.HEAP8.length / 2 ** 20).toFixed(0)} MiB`,
  );
  process.exit(0);
}
if (process.argv[2]?.endsWith('.pickle')) {
  const bytes = readFileSync(process.argv[2]);
  const rss0 = process.memoryUsage().rss;
  const t0 = performance.now();
  let what;
  try {
    const r = tm.readSnapshot(bytes);
    what = `${r.events.total.toLocaleString('en-US')} entries, peak ${(r.peak.allocatedBytes / 2 ** 30).toFixed(2)} GiB`;
  } catch (e) {
    what = `${e.code} on "${e.field}": ${e.message.slice(0, 120)}`;
  }
  const rss = process.resourceUsage().maxRSS * 1024;
  console.log(
    `${process.argv[2]}: ${(bytes.length / 1e6).toFixed(0)} MB read in ` +
      `${((performance.now() - t0) / 1000).toFixed(2)} s: ${what}; peak RSS ` +
      `${(rss / 2 ** 20).toFixed(0)} MiB (before: ${(rss0 / 2 ** 20).toFixed(0)} MiB)`,
  );
  process.exit(0);
}
// The writer against CPython's pickle, when there is one.
if (existsSync('/usr/bin/python3')) {
  const dir = mkdtempSync(join(tmpdir(), 'tm-snap-'));
  const small = write(2500);
  writeFileSync(join(dir, 's.pickle'), small);
  const py = execFileSync('/usr/bin/python3', [
    '-c',
    'import pickle,sys; s=pickle.load(open(sys.argv[1],"rb")); t=s["device_traces"][0]; ' +
      'print(len(t), sum(e["size"] for e in t if e["action"]=="alloc"))',
    join(dir, 's.pickle'),
  ])
    .toString()
    .trim();
  const r = tm.readSnapshot(small);
  const ours = `${r.events.total} ${r.events.alloc}`;
  console.log(`writer check: python entries/alloc bytes ${py}; trainmem entries/allocs ${ours}`);
  if (Number(py.split(' ')[0]) !== r.events.total)
    throw new Error('the writer disagrees with Python');
  rmSync(dir, { recursive: true, force: true });
}

const mb = Number(process.argv[2] || 200);
const count = Math.round((mb * 1e6) / 130);
let bytes = write(count);
while (bytes.length < mb * 1e6 * 0.98)
  bytes = write(Math.round(count * ((mb * 1e6) / bytes.length)));
const rss0 = process.memoryUsage().rss;
console.log(
  `file: ${(bytes.length / 1e6).toFixed(1)} MB, ${count.toLocaleString('en-US')} trace entries (approx.)`,
);
const times = [];
let summary;
for (let i = 0; i < 3; i++) {
  const t0 = performance.now();
  summary = tm.readSnapshot(bytes);
  times.push(performance.now() - t0);
}
const rss = process.resourceUsage().maxRSS * 1024;
console.log(
  `readSnapshot: ${times.map((x) => (x / 1000).toFixed(2)).join(' s, ')} s (3 runs); ` +
    `${summary.events.total.toLocaleString('en-US')} entries, ${summary.steps.count} steps, ` +
    `peak ${(summary.peak.allocatedBytes / 2 ** 30).toFixed(2)} GiB`,
);
console.log(
  `peak RSS ${(rss / 2 ** 20).toFixed(0)} MiB (before reading: ${(rss0 / 2 ** 20).toFixed(0)} MiB, ` +
    `the file itself ${(bytes.length / 2 ** 20).toFixed(0)} MiB)`,
);
