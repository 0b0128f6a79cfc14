// One error class: the ES entry, the CommonJS entry, the CLI's usage error and the page's input
// error are all TrainmemError (the CLI's adds the flag at fault).
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { createRequire } from 'node:module';
import { TrainmemError, load } from '../../web/lib/index.js';
import { TrainmemError as FromErrors } from '../../web/lib/errors.js';
import { UsageError } from '../../web/lib/cli/usage-error.js';
import { parseArgs } from '../../web/lib/cli/args.js';
import { InputError, modelOf } from '../../web/app/requests.js';

const require = createRequire(import.meta.url);

test('the CommonJS entry exports the very class of the ES entry (no copy)', () => {
  const cjs = require('../../web/lib/index.cjs');
  assert.equal(cjs.TrainmemError, TrainmemError);
  assert.equal(FromErrors, TrainmemError);
});

test('a core error is a TrainmemError and an Error', async () => {
  const tm = await load();
  assert.throws(
    () => tm.checkpointSize({ model: { params: -5 }, optimizer: 'adam' }),
    (e) => e instanceof TrainmemError && e instanceof Error && e.field === 'model.params',
  );
});

test("the CLI's usage error extends TrainmemError and adds the flag", () => {
  let err;
  try {
    parseArgs(['peak-memory', '--micro-batch', 'many']);
  } catch (e) {
    err = e;
  }
  assert.ok(err instanceof UsageError);
  assert.ok(err instanceof TrainmemError);
  assert.equal(err.code, 'invalid_number');
  assert.equal(err.flag, 'micro-batch');
  assert.equal(err.name, 'TrainmemError');
});

test("the page's input error is a TrainmemError naming the field", () => {
  let err;
  try {
    modelOf({ modelSource: 'config', config: '{"hidden_size": ' });
  } catch (e) {
    err = e;
  }
  assert.ok(err instanceof InputError);
  assert.ok(err instanceof TrainmemError);
  assert.equal(err.code, 'invalid_json');
  assert.equal(err.field, 'model.config');
});
