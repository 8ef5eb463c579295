import assert from 'node:assert/strict';
import { it } from 'node:test';
import type { HostState } from '../../../reducers/state.js';
import { healthFlags } from '../../../views/clusters/select.js';

const host = (over: Partial<HostState>): HostState => ({
  address: '10.0.0.1:80',
  ip: '10.0.0.1',
  port: 80,
  hostname: '',
  weight: 1,
  priority: 0,
  locality: { region: '', zone: '', sub_zone: '' },
  metadata: {},
  edsHealth: 'UNKNOWN',
  failedActiveHc: false,
  failedOutlierCheck: false,
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
