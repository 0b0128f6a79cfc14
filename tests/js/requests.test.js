// The page's request builders (web/app/requests.js) against the core: what the page sends is a
// request the core accepts, in the shape index.d.ts documents.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { load } from '../../web/lib/index.js';
import { peakMemoryRequest } from '../../web/app/requests.js';
import { defaults } from '../../web/app/state.js';

test('peak tab, optimal checkpointing: the budget travels inside `checkpointing`', async () => {
  const tm = await load();
  const st = { ...defaults(), preset: 'gpt2', checkpointing: 'optimal', budgetGB: 0.5 };
  const req = peakMemoryRequest(st);
  // docs/peak-memory.md: checkpointing is a strategy name or { strategy, budgetBytes, ... }
  assert.deepEqual(req.checkpointing, { strategy: 'optimal', budgetBytes: 5e8 });
  assert.equal('budgetBytes' in req, false);
  const r = tm.peakMemory(req);
  // the plan keeps the stored activations within the budget the user typed
  assert.ok(r.storedActivationBytes <= 5e8, `${r.storedActivationBytes} B stored`);
  const none = tm.peakMemory({ ...req, checkpointing: 'none' });
  assert.ok(r.storedActivationBytes < none.storedActivationBytes);
});
