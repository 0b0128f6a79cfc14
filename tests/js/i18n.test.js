// The page's two languages (web/app/i18n): the same keys and placeholders in both, and every
// input of the page with its label and its one-line explanation (issue 7: "every input has a
// sensible default and a short explanation").
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { readFileSync } from 'node:fs';
import { FIELDS } from '../../web/app/state.js';

const read = (lang) =>
  JSON.parse(readFileSync(new URL(`../../web/app/i18n/${lang}.json`, import.meta.url), 'utf8'));
const en = read('en');
const ar = read('ar');

test('English and Arabic have the same keys', () => {
  // core.<code>: the core's sentences, whose English is the core's catalog
  // (tests/js/messages.test.js checks those).
  const own = (s) => Object.keys(s).filter((k) => !k.startsWith('core.'));
  assert.deepEqual(own(ar).sort(), own(en).sort());
});

test('each string has the same placeholders in both languages', () => {
  const holes = (s) => [...String(s).matchAll(/\{(\w+)\}/g)].map((m) => m[1]).sort();
  for (const k of Object.keys(en)) assert.deepEqual(holes(ar[k]), holes(en[k]), k);
});

test('every input has a label and an explanation, in both languages', () => {
  // Not inputs with a help line: the language picker, the tab strip, the shown example, and
  // the model-source radios (their three labels are the explanation).
  const without = new Set(['lang', 'tab', 'ex', 'modelSource']);
  for (const key of Object.keys(FIELDS).filter((k) => !without.has(k))) {
    for (const [lang, s] of [
      ['en', en],
      ['ar', ar],
    ]) {
      assert.ok(s[`field.${key}`], `${lang}: field.${key}`);
      assert.ok(s[`help.${key}`], `${lang}: help.${key}`);
    }
  }
});

test('every free-text input has an example as its placeholder, in both languages', () => {
  // web/app/form.js textControl: a missing key would show the key itself in the box. The
  // preset, config and GPU inputs are pickers or a text area, not textControl.
  const notText = new Set(['ex', 'preset', 'config', 'gpu']);
  for (const [key, f] of Object.entries(FIELDS)) {
    if (f.kind !== 'text' || notText.has(key)) continue;
    assert.ok(en[`placeholder.${key}`], `en: placeholder.${key}`);
    assert.ok(ar[`placeholder.${key}`], `ar: placeholder.${key}`);
  }
});

test('in Arabic, a number with a Latin unit is isolated left-to-right (else "16 GB" shows as "GB 16")', () => {
  // Unicode bidi: digits and a Latin unit are separate runs in a right-to-left line, and the
  // space between them takes the line's direction (UAX #9); LRI … PDI keeps them together.
  const bare = /(?<!\u2066)(?:\d[\d.,]*|\{\w+\}) (?:MiB|GiB|GB|MB|KB)(?!\u2069)/;
  for (const [k, v] of Object.entries(ar)) assert.doesNotMatch(String(v), bare, k);
});
