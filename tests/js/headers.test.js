// The public headers (cpp/include/trainmem/) are the typed API: JSON belongs to cpp/src/io/.
// No public header may include nlohmann or a private io/ header, except the ones listed here,
// which still declare JSON writers or hold JSON members; the list may only shrink.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { readdirSync, readFileSync } from 'node:fs';

const dir = new URL('../../cpp/include/trainmem/', import.meta.url);
const STILL_JSON = new Set(['activations.hpp', 'time_model.hpp']);

test('public headers include neither nlohmann nor io/ headers', () => {
  const offenders = [];
  for (const name of readdirSync(dir).filter((f) => f.endsWith('.hpp'))) {
    const text = readFileSync(new URL(name, dir), 'utf8');
    const json = /^\s*#\s*include\s*[<"](nlohmann\/|io\/)/m.test(text) || /nlohmann::/.test(text);
    if (json && !STILL_JSON.has(name)) offenders.push(name);
    if (!json && STILL_JSON.has(name)) offenders.push(`${name} (clean now: take it off the list)`);
  }
  assert.deepEqual(offenders, []);
});
