import assert from 'node:assert/strict';
import { test } from 'node:test';
import { requestId } from '../../../src/dataplane/http/headers.js';

const UUID_V4 = /^[0-9a-f]{8}-[0-9a-f]{4}-4[0-9a-f]{3}-[89ab][0-9a-f]{3}-[0-9a-f]{12}$/;

test('request ids are version 4 UUIDs, distinct across refills of the random pool', () => {
  const seen = new Set<string>();
  // 2,000 ids span several refills of the 256-id pool.
  for (let i = 0; i < 2000; i++) {
    const id = requestId();
    assert.match(id, UUID_V4);
    seen.add(id);
  }
  assert.equal(seen.size, 2000);
});

test('every hex digit position varies, so no byte of the pool is skipped or fixed', () => {
  const ids = Array.from({ length: 512 }, () => requestId());
  for (let pos = 0; pos < 36; pos++) {
    if ([8, 13, 14, 18, 23].includes(pos)) continue; // dashes, the version digit
    const digits = new Set(ids.map((id) => id[pos]));
    assert.ok(digits.size > 1, `position ${pos} never changes`);
  }
});
