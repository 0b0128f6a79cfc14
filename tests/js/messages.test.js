// The core's sentences in the user's language: every sentence a result holds is in the core's
// message catalog (cpp/data/messages.json) and comes back as codes in result.messages, and the
// page translates every code (web/app/i18n/ar.json, keys core.<code>; English is the catalog).
// The requests: tests/fixtures/message_requests.json (tools/message_requests.py) and the
// golden cases.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { readFileSync } from 'node:fs';
import { load, TrainmemError } from '../../web/lib/index.js';

const json = (p) => JSON.parse(readFileSync(new URL(p, import.meta.url), 'utf8'));
const catalog = json('../../cpp/data/messages.json').messages;
const ar = json('../../web/app/i18n/ar.json');
const en = json('../../web/app/i18n/en.json');
const requests = [
  ...json('../fixtures/message_requests.json').requests,
  ...json('../fixtures/golden.json').cases.map((c) => [c.function, c.request]),
];
const tm = await load();

// Text from data files, not the core's sentences: preset names and their citations; what the
// tracer wrote into a trace (python/trainmem_trace).
const DATA = [
  /^presets:/,
  /^describeModel:(sourceNote|name)$/,
  /^(peakMemory|describeModel):trace\.notes\[\]$/,
];
const NAMES = new Set(['name', 'field', 'id']);
// Catalog entries that no request of the fixture reaches, with the reason.
const UNREACHED = {
  'acc.ck.noHelp': 'a checkpointed plan never needs more memory than the same plan without',
  'acc.warn.batchnormMaybe':
    'accumulation needs an architecture or a trace, which lists every buffer',
  'acc.warn.recompute': 'every strategy the accumulation planner takes gives a plan',
  'flops.unknown': 'accumulation needs an architecture, so the FLOPs never come from a count',
  'peak.assume.state.count': 'peakMemory needs an architecture for the activations',
};

function sentences(v, path, key, out) {
  if (typeof v === 'string') {
    if (v.includes(' ') && !NAMES.has(key)) out.push([path, v]);
  } else if (Array.isArray(v)) {
    v.forEach((x, i) => sentences(x, `${path}[${i}]`, key, out));
  } else if (v && typeof v === 'object') {
    for (const [k, x] of Object.entries(v))
      if (!(path === '' && k === 'messages')) sentences(x, path ? `${path}.${k}` : k, k, out);
  }
  return out;
}

const holes = (s) => [...String(s).matchAll(/\{(\w+)\}/g)].map((m) => m[1]).sort();
const render = (template, params) => template.replace(/\{(\w+)\}/g, (m, k) => params[k] ?? m);

test('every sentence of every result is in the catalog, and its codes spell it', () => {
  const used = new Set();
  const missing = [];
  let checked = 0;
  for (const [fn, request] of requests) {
    let result;
    try {
      result = tm[fn](request);
    } catch (e) {
      if (e instanceof TrainmemError) continue;
      throw e;
    }
    for (const [path, text] of sentences(result, '', '', [])) {
      if (DATA.some((re) => re.test(`${fn}:${path.replace(/\[\d+\]/g, '[]')}`))) continue;
      const parts = result.messages?.[path];
      if (!parts) {
        missing.push(`${fn} ${path}: ${text}`);
        continue;
      }
      // The English templates with the returned parameters give back the text exactly.
      const spelled = parts.map((p) => render(catalog[p.code], p.params)).join('; ');
      assert.equal(spelled, text, `${fn} ${path}`);
      for (const p of parts) used.add(p.code);
      checked++;
    }
  }
  assert.deepEqual([...new Set(missing)], [], 'sentences the catalog does not spell');
  assert.ok(checked > 1000, `only ${checked} sentences checked`);
  const unused = Object.keys(catalog).filter((c) => !used.has(c) && !(c in UNREACHED));
  assert.deepEqual(unused, [], 'catalog entries no request reaches (list them in UNREACHED)');
  for (const c of Object.keys(UNREACHED)) assert.ok(!used.has(c), `${c} is reached now`);
});

test('Arabic translates every code of the catalog with the same parameters', () => {
  for (const [code, english] of Object.entries(catalog)) {
    const key = `core.${code}`;
    assert.equal(typeof ar[key], 'string', `ar.json lacks ${key}`);
    assert.deepEqual(holes(ar[key]), holes(english), key);
  }
  const extra = Object.keys(ar).filter((k) => k.startsWith('core.') && !(k.slice(5) in catalog));
  assert.deepEqual(extra, [], 'ar.json translates codes the catalog does not have');
  assert.deepEqual(
    Object.keys(en).filter((k) => k.startsWith('core.')),
    [],
    'English comes from the catalog',
  );
});

test('both languages explain every error code of the core', () => {
  const header = readFileSync(new URL('../../cpp/include/trainmem/error.hpp', import.meta.url));
  const codes = [...String(header).matchAll(/constexpr const char\* k\w+ = "(\w+)"/g)].map(
    (m) => m[1],
  );
  assert.ok(codes.length >= 10, 'error codes found in error.hpp');
  for (const c of codes)
    for (const [lang, s] of [
      ['en', en],
      ['ar', ar],
    ])
      assert.equal(typeof s[`coreError.${c}`], 'string', `${lang}.json lacks coreError.${c}`);
});

test("a parameter carries the user's text as written", () => {
  const r = tm.peakMemory({
    model: { preset: 'gpt2' },
    microBatch: 1,
    seqLen: 128,
    lora: { rank: 4, targetModules: ['c_attn', 'my layer'] },
  });
  const i = r.assumptions.findIndex((a) => a.includes("'my layer'"));
  assert.ok(i >= 0);
  assert.deepEqual(r.messages[`assumptions[${i}]`], [
    { code: 'peak.assume.lora.unmatched', params: { target: 'my layer' } },
  ]);
});
