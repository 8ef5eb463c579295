/**
 * Root cause (issue 25): `/runtime` built its entries in a plain object and read each layer's
 * value by index, so a key named `__proto__` (which `/runtime_modify` accepts and stores)
 * set the answer's prototype and vanished from it, and a layer without `toString` showed
 * Object.prototype's function (JSON `null`) where it holds no value (`""`).
 */
import assert from 'node:assert/strict';
import { test } from 'node:test';
import type { State } from '../../../reducers/state.js';
import { runtimeData } from '../../../views/runtime/render.js';

test('keys named like Object.prototype members are entries like any other', () => {
  const admin = JSON.parse('{"__proto__":"9","toString":"3","plain":"1"}') as Record<string, string>;
  const state = {
    runtime: {
      layers: [
        { name: 'base', kind: 'static', values: {} },
        { name: 'admin', kind: 'admin', values: admin },
      ],
    },
  } as unknown as State;
  const data = JSON.parse(JSON.stringify(runtimeData(state)));
  assert.deepEqual(
    data.entries,
    JSON.parse(
      '{"__proto__":{"final_value":"9","layer_values":["","9"]},"plain":{"final_value":"1","layer_values":["","1"]},"toString":{"final_value":"3","layer_values":["","3"]}}',
    ),
  );
});
