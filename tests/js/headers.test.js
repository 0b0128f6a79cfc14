// The public headers (cpp/include/trainmem/) are the typed API: JSON belongs to cpp/src/io/.
// No public header may include nlohmann or a private io/ header, nor name nlohmann's types.
// The build enforces the direction for the core's sources (trainmem_core compiles without
// nlohmann, and trainmem_core_alone links it without io); this test also covers the public
// headers that no core source compiles (api.hpp is compiled only by the io library and the
// bindings) and io/ headers that do not include nlohmann.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { readdirSync, readFileSync } from 'node:fs';

const dir = new URL('../../cpp/include/trainmem/', import.meta.url);

test('public headers include neither nlohmann nor io/ headers', () => {
  const offenders = [];
  for (const name of readdirSync(dir).filter((f) => f.endsWith('.hpp'))) {
    const text = readFileSync(new URL(name, dir), 'utf8');
    const json = /^\s*#\s*include\s*[<"](nlohmann\/|io\/)/m.test(text) || /nlohmann::/.test(text);
    if (json) offenders.push(name);
  }
  assert.deepEqual(offenders, []);
});
