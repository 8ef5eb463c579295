import assert from 'node:assert/strict';
import { it } from 'node:test';
import { destinationState } from '../../../reducers/hosts.js';
import type { HostState } from '../../../reducers/state.js';
import { healthFlags } from '../../../views/clusters/select.js';

const host = (over: Partial<HostState>): HostState => ({
  ...destinationState({ address: '10.0.0.1:80', ip: '10.0.0.1', port: 80 }),
  ...over,
});

it('composes health flags in the reference order', () => {
  assert.deepEqual(healthFlags(host({})), []);
  assert.deepEqual(
    healthFlags(host({ failedActiveHc: true, failedOutlierCheck: true, edsHealth: 'UNHEALTHY' })),
    ['/failed_active_hc', '/failed_outlier_check', '/failed_eds_health'],
  );
  assert.deepEqual(healthFlags(host({ edsHealth: 'DEGRADED' })), ['/degraded_eds_health']);
});
