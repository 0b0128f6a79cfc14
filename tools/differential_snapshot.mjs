// Differential check of the snapshot reader: two builds of the WebAssembly core read the same
// memory snapshots (readSnapshot, and compareSnapshot against a few predictions), intact and
// damaged (cut short, bytes changed, bytes inserted), and every response must be byte-identical.
// tools/differential.mjs sends each request with one of two intact files; this covers the
// reader's error paths and the summaries of many more files.
//
//   node tools/differential_snapshot.mjs OLD_MODULE.mjs [NEW_MODULE.mjs] [--n 30000] [--seed 1]
//
// Files: the fuzzer's seeds (tests/fuzz/gen_snapshot_seeds.py, with /usr/bin/python3), pickles
// of unusual values at protocols 2-5 written here by Python's pickle.dumps, a hand-written
// pickle of the rarer opcodes, tests/fixtures/snapshots and tests/fuzz/regressions_snapshot.
// Exit status 1 on a difference (the first ones are printed).
import { execFileSync } from 'node:child_process';
import { existsSync, mkdtempSync, readFileSync, readdirSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join, resolve } from 'node:path';
import { fileURLToPath, pathToFileURL } from 'node:url';
import { parseArgs } from 'node:util';

const { values, positionals } = parseArgs({
  allowPositionals: true,
  options: { n: { type: 'string', default: '30000' }, seed: { type: 'string', default: '1' } },
});
const TOTAL = Number(values.n);
let state = Number(values.seed) >>> 0 || 1;
if (positionals.length < 1) {
  console.error('usage: node tools/differential_snapshot.mjs OLD.mjs [NEW.mjs] [--n N] [--seed S]');
  process.exit(2);
}
const root = fileURLToPath(new URL('..', import.meta.url));
const oldPath = resolve(positionals[0]);
const newPath = resolve(positionals[1] ?? `${root}web/lib/wasm/trainmem_wasm.mjs`);

const rnd = () => (state = (Math.imul(state, 1103515245) + 12345) >>> 0) / 4294967296;
const ri = (n) => Math.floor(rnd() * n);
const pick = (a) => a[ri(a.length)];

// ---- the files
const files = [];
const readDir = (d) => {
  for (const f of readdirSync(d).sort())
    if (!f.endsWith('.expected.json')) files.push(readFileSync(join(d, f)));
};
const PY_ODD = `
import pickle, sys
d = {"segments": [], "device_traces": [[{"action": "alloc", "addr": -5, "size": 2**70,
      "stream": (1, 2, 3, 4), "frames": [{"filename": b"x", "line": 1.5, "name": "n"}],
      "time_us": None}]],
     "allocator_settings": {"garbage_collection_threshold": 0.5, "max_split_size": 2**63 + 5,
      "expandable_segments": False, "PYTORCH_CUDA_ALLOC_CONF": "x" * 300},
     "extra": [(1,), (1, 2), (1, 2, 3), (1, 2, 3, 4), b"b" * 300, True, False, None, -2**40,
               2**64, -(2**64), 3.25, "s" * 70000]}
for p in (2, 3, 4, 5):
    open(f"{sys.argv[1]}/odd_p{p}.pickle", "wb").write(pickle.dumps(d, protocol=p))
`;
if (existsSync('/usr/bin/python3')) {
  const dir = mkdtempSync(join(tmpdir(), 'tm-snapdiff-'));
  execFileSync('/usr/bin/python3', [`${root}tests/fuzz/gen_snapshot_seeds.py`, root, dir]);
  execFileSync('/usr/bin/python3', ['-c', PY_ODD, dir]);
  readDir(dir);
  rmSync(dir, { recursive: true, force: true });
}
readDir(`${root}tests/fixtures/snapshots`);
readDir(`${root}tests/fuzz/regressions_snapshot`);
// The rarer opcodes a snapshot does not hold: LIST, Python 2 strings, DICT, POP, TUPLE, DUP,
// BINBYTES8, BYTEARRAY8, POP_MARK, BINPUT, BINGET and FRAME (STOP then finds five values).
files.push(
  Buffer.from(
    '8002284b014b026c28550361626354030000006465666430284b017432288e0100000000000000' +
      '7a96010000000000000079317d710068009501000000000000002e',
    'hex',
  ),
);

// ---- the requests
const MLP = { mlp: { sizes: [64, 128, 128, 32] }, microBatch: 32, runtime: 'pytorch-cpu' };
const READ = [{}, { points: 2 }, { points: 3, topFrames: 1 }, { device: 1 }, { device: 5 }];
READ.push({ device: 0, points: 10000, topFrames: 100 });
const COMPARE = [
  { request: { ...MLP, optimizer: 'adam' } },
  { request: { ...MLP, optimizer: 'sgd' }, points: 5, topFrames: 2 },
  {
    request: { ...MLP, optimizer: 'adam' },
    measured: { maxAllocatedBytes: 1000, maxReservedBytes: 5e9, nvidiaSmiUsedBytes: 6e9 },
  },
  { request: { ...MLP, mlp: { sizes: [4, 4] }, microBatch: 1, optimizer: 'adam' } },
  {
    request: { ...MLP, mlp: { sizes: [2048, 2048, 2048] }, optimizer: 'adamw' },
    measured: { maxReservedBytes: 1e6 },
  },
  { request: { ...MLP, optimizer: 'adam', checkpointing: { strategy: 'full' } } },
  {
    request: { mlp: MLP.mlp, microBatch: 32, optimizer: 'adam' },
    measured: { maxAllocatedBytes: 1e8, maxReservedBytes: 9e8 },
  },
];

function damage(b) {
  const a = Buffer.from(b);
  const insert = (n) => {
    const p = ri(a.length + 1);
    const extra = Buffer.from(Array.from({ length: n }, () => ri(256)));
    return Buffer.concat([a.subarray(0, p), extra, a.subarray(p)]);
  };
  switch (ri(5)) {
    case 0:
      return a.subarray(0, ri(a.length + 1));
    case 1:
      for (let j = 1 + ri(4); j > 0; --j) a[ri(a.length)] = ri(256);
      return a;
    case 2:
      return insert(1);
    case 3:
      return insert(3);
    default:
      return a;
  }
}

const load = async (p) => (await import(pathToFileURL(p).href)).default();
let [oldM, newM] = [await load(oldPath), await load(newPath)];
const respond = async (which, fn, text, bytes) => {
  try {
    return (which === 'old' ? oldM : newM).callBytes(fn, text, bytes);
  } catch (e) {
    // An aborted module is unusable: a fresh instance replaces it, the abort is the response.
    if (which === 'old') oldM = await load(oldPath);
    else newM = await load(newPath);
    return `aborted: ${e}`;
  }
};
const outcomes = {};
const differences = [];
for (let i = 0; i < TOTAL; ++i) {
  const compare = rnd() < 0.25;
  const fn = compare ? 'compareSnapshot' : 'readSnapshot';
  const text = JSON.stringify(pick(compare ? COMPARE : READ));
  const file = pick(files);
  const bytes = rnd() < 0.15 ? file : damage(file);
  const a = await respond('old', fn, text, bytes);
  const b = await respond('new', fn, text, bytes);
  let outcome = 'unparsable';
  try {
    const o = JSON.parse(b);
    outcome = o.ok ? `${fn} ok` : `${fn} ${o.error.code}`;
  } catch {}
  outcomes[outcome] = (outcomes[outcome] ?? 0) + 1;
  if (a !== b)
    differences.push({ fn, text, bytes: bytes.toString('hex').slice(0, 400), old: a, new: b });
}
console.log(
  `${TOTAL} snapshot requests, ${files.length} files: ${TOTAL - differences.length} byte-identical`,
);
for (const [k, v] of Object.entries(outcomes).sort()) console.log(`  ${k}: ${v}`);
for (const d of differences.slice(0, 3)) console.log(JSON.stringify(d).slice(0, 3000));
console.log(`differences: ${differences.length}`);
process.exit(differences.length ? 1 : 0);
