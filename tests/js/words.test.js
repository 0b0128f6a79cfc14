// No internal words in what users read: names of internal work items ("seed 003"), work-round
// tags ("(h2)"), session or issue numbers. Checked in the types, the page's texts, the CLI's
// help, the string literals of the core, and every result and error of the golden requests.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { readFileSync, readdirSync } from 'node:fs';
import { join } from 'node:path';
import { load } from '../../web/lib/index.js';
import { main } from '../../web/lib/cli.js';
import { COMMANDS } from '../../web/lib/cli/commands/index.js';
import { repoRoot } from './fixtures/packed.js';

const INTERNAL =
  /\bseeds?\b|\(h\d+\)|\bsession \d|\bsessions?'s\b|\bissue \d|\bhelper \d|\bwork round/i;
const offending = (text) => text.split('\n').filter((l) => INTERNAL.test(l));
const read = (p) => readFileSync(join(repoRoot, p), 'utf8');

test('the check itself recognises the words', () => {
  for (const s of ['seed 003', "Seed 000's table", 'fast path (h2)', 'issue 19', 'session 3']) {
    assert.ok(INTERNAL.test(s), s);
  }
  for (const s of ['speed', 'seeded random', 'high', 'h2 heading', 'torch 1.13']) {
    assert.ok(!INTERNAL.test(s), s);
  }
});

test('index.d.ts, index.d.cts and the page texts (both languages)', () => {
  for (const p of [
    'web/lib/index.d.ts',
    'web/lib/index.d.cts',
    'web/app/i18n/en.json',
    'web/app/i18n/ar.json',
    'web/app/index.html',
  ]) {
    assert.deepEqual(offending(read(p)), [], p);
  }
});

test("the CLI's help, general and per command", async () => {
  for (const args of [['--help'], ...Object.keys(COMMANDS).map((c) => [c, '--help'])]) {
    let text = '';
    await main(args, { out: (t) => (text += t), err: (t) => (text += t), stdin: () => '' });
    assert.deepEqual(offending(text), [], args.join(' '));
  }
});

test('string literals of the core (comments may cite anything)', () => {
  const files = [];
  const walk = (dir) => {
    for (const e of readdirSync(join(repoRoot, dir), { withFileTypes: true })) {
      const p = `${dir}/${e.name}`;
      if (e.isDirectory()) walk(p);
      else if (/\.(cpp|hpp)$/.test(e.name)) files.push(p);
    }
  };
  walk('cpp/src');
  walk('cpp/include');
  const bad = [];
  for (const f of files) {
    for (const [i, line] of read(f).split('\n').entries()) {
      const code = line.replace(/\/\/.*$/, '');
      for (const m of code.matchAll(/"((?:[^"\\]|\\.)*)"/g)) {
        if (INTERNAL.test(m[1])) bad.push(`${f}:${i + 1}: ${m[1]}`);
      }
    }
  }
  assert.deepEqual(bad, []);
});

test('every result and error of the golden requests', async () => {
  const tm = await load();
  const { cases } = JSON.parse(read('tests/fixtures/golden.json'));
  const bad = [];
  for (const c of cases) {
    let text;
    try {
      text = JSON.stringify(tm[c.function](c.request));
    } catch (e) {
      text = String(e.message);
    }
    if (INTERNAL.test(text)) bad.push(`${c.name}: ${INTERNAL.exec(text)?.[0]}`);
  }
  assert.deepEqual(bad, []);
});
