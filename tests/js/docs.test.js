// One source for the npm documentation: the README (what npm shows). docs/npm.md is a pointer
// to it and may not repeat it: no README section heading, no README line of prose or code.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { readFileSync } from 'node:fs';
import { join } from 'node:path';
import { repoRoot } from './fixtures/packed.js';

const readme = readFileSync(join(repoRoot, 'README.md'), 'utf8');
const npm = readFileSync(join(repoRoot, 'docs/npm.md'), 'utf8');

test('docs/npm.md repeats no README heading', () => {
  const headings = (text) => text.split('\n').filter((l) => /^#{2,} /.test(l));
  const ours = new Set(headings(npm));
  assert.deepEqual(
    headings(readme).filter((h) => ours.has(h)),
    [],
  );
});

test('docs/npm.md repeats no README line (40 characters or more)', () => {
  const lines = new Set(
    readme
      .split('\n')
      .map((l) => l.trim())
      .filter((l) => l.length >= 40),
  );
  assert.deepEqual(
    npm
      .split('\n')
      .map((l) => l.trim())
      .filter((l) => lines.has(l)),
    [],
  );
});

test('every README section docs/npm.md names exists', () => {
  const named = [...npm.matchAll(/\*\*([^*]+)\*\*/g)].map((m) => m[1]);
  assert.ok(named.length >= 8, 'the pointer names the README sections');
  for (const name of named) {
    assert.ok(readme.includes(`\n## ${name}\n`), `README has no section "${name}"`);
  }
});
