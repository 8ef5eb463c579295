import assert from 'node:assert/strict';
import { test } from 'node:test';
import { startProxyProcess } from '../helpers/proxy-process.js';

test('--allow-unknown-static-fields serves, warns about each unknown field and counts them', async () => {
  const proxy = await startProxyProcess(
    {
      admin: { address: { socket_address: { address: '127.0.0.1', port_value: 0 } }, bogus_admin_knob: 1 },
      static_resources: {
        clusters: [
          {
            name: 'c',
            connect_timeout: '1s',
            made_up_field: true,
            load_assignment: {
              cluster_name: 'c',
              endpoints: [
                {
                  lb_endpoints: [
                    { endpoint: { address: { socket_address: { address: '127.0.0.1', port_value: 9 } } } },
                  ],
                },
              ],
            },
          },
        ],
      },
    },
    ['--allow-unknown-static-fields'],
  );
  try {
    const stats = await proxy.get('/stats?filter=^server\\.static_unknown_fields$');
    assert.equal(stats.body.trim(), 'server.static_unknown_fields: 2');
    assert.match(proxy.stderr(), /made_up_field/);
    assert.match(proxy.stderr(), /bogus_admin_knob/);
  } finally {
    await proxy.stop();
  }
});
