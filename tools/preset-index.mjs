// The page's model and GPU pickers need only each preset's id and display name. They are read
// here, at page build time, from the same data files the core embeds (cpp/data/models/*.json,
// cpp/data/gpus/*.json), and bundled into the page (tools/build-page.mjs): the page then lists
// the presets without calling the core at start-up. That call parsed every data file and made
// V8 tier the JSON parser up in the background during the first result (bench/RESULTS.md,
// session 4). tests/js/presets.test.js checks this index against the core's presets().
import { readdirSync, readFileSync } from 'node:fs';
import { fileURLToPath } from 'node:url';

const data = fileURLToPath(new URL('../cpp/data/', import.meta.url));

function list(kind) {
  return readdirSync(`${data}${kind}`)
    .filter((f) => f.endsWith('.json'))
    .sort()
    .map((f) => JSON.parse(readFileSync(`${data}${kind}/${f}`, 'utf8')))
    .filter((p) => p && typeof p.id === 'string')
    .map((p) => ({ id: p.id, name: typeof p.name === 'string' ? p.name : p.id }));
}

/** { models: [{id, name}], gpus: [{id, name}] }, in the core's order (sorted by file name). */
export function presetIndex() {
  return { models: list('models'), gpus: list('gpus') };
}
