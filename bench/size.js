// Size of what users download: the packed tarball (npm pack --dry-run figures) and the WASM
// module gzip-compressed as a browser receives it, against bench/size-budget.json.
// Usage: node bench/size.js   (run `bash tools/build.sh wasm` first)
import { readFileSync } from 'node:fs';
import { gzipSync } from 'node:zlib';
import { spawnSync } from 'node:child_process';

const root = new URL('../', import.meta.url);
const budget = JSON.parse(readFileSync(new URL('bench/size-budget.json', root)));
const r = spawnSync('npm', ['pack', '--dry-run', '--json', '--ignore-scripts'], {
  cwd: root,
  encoding: 'utf8',
});
const info = JSON.parse(r.stdout.slice(r.stdout.search(/^\[\s*$/m)))[0];
const wasm = readFileSync(new URL('web/lib/wasm/trainmem_wasm.mjs', root));
const rows = [
  ['packed tarball', info.size, budget.tarballBytes],
  ['unpacked', info.unpackedSize, budget.unpackedBytes],
  ['wasm module, gzip -9', gzipSync(wasm, { level: 9 }).length, budget.wasmModuleGzipBytes],
];
let over = false;
for (const [name, bytes, limit] of rows) {
  const ok = bytes <= limit;
  over ||= !ok;
  console.log(
    `${name.padEnd(22)} ${String(bytes).padStart(9)} B  budget ${limit} B  ${ok ? 'ok' : 'OVER'}`,
  );
}
console.log(`files: ${info.files.map((f) => f.path).join(', ')}`);
process.exitCode = over ? 1 : 0;
