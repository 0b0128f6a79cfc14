// The Arabic page against its glossary (docs/glossary-ar.json, the project's GLOSSARY-AR): one
// term per concept — no form the glossary lists to avoid, every glossary stem with its shadda —
// Arabic punctuation in Arabic sentences (، ؛ ؟), and code and formulas isolated left to right
// (in backticks, which the page renders as a left-to-right isolate), so that a right-to-left
// line cannot reorder "torch.cuda.max_memory_reserved()" into "()torch.cuda…".
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { readFileSync } from 'node:fs';

import { violations, prose } from './fixtures/glossary.js';

const ar = JSON.parse(readFileSync(new URL('../../web/app/i18n/ar.json', import.meta.url), 'utf8'));

test('the check itself: an avoided form, a stem without its shadda, and correct text', () => {
  assert.ok(violations({ a: 'محوّلات صغيرة' }).length >= 1); // adapters read as Transformers
  assert.ok(violations({ a: 'حالات المحسن' }).length >= 1); // optimizer without its shadda
  assert.ok(violations({ a: 'لا تتّسع' }).length >= 1);
  assert.deepEqual(violations({ a: 'تكفي الذّاكرة، وحالات المحسّن والتّدرّجات' }), []);
  assert.deepEqual(violations({ a: 'نقاط تحقّق التّدرّج (`torch.utils.checkpoint`)' }), []);
});

test("every Arabic string uses the glossary's terms", () => {
  assert.deepEqual(violations(ar), []);
});

test('Arabic sentences take Arabic punctuation (، ؛ ؟), not Latin , ; ?', () => {
  const latin = /[\u0621-\u064a][\u064b-\u0652]*\s*[,;?]|[,;?]\s*[\u0621-\u064a]/;
  const bad = Object.entries(ar).filter(([, v]) => latin.test(prose(v)));
  assert.deepEqual(
    bad.map(([k, v]) => `${k}: ${v}`),
    [],
  );
});

test('code and formulas in Arabic strings are isolated left to right', () => {
  // identifiers with dots, underscores, calls or assignments: torch.save, zero_grad(...), a=b
  const code = /[A-Za-z_][\w]*(?:[._][\w]+)+(?:\([^)]*\))?|[A-Za-z_]\w*\([^)]*\)|\w+=\w+/;
  const bad = Object.entries(ar).filter(
    ([k, v]) => !k.startsWith('placeholder.') && code.test(prose(v)),
  );
  assert.deepEqual(
    bad.map(([k, v]) => `${k}: ${code.exec(prose(v))?.[0]}`),
    [],
  );
});
