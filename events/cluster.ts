import type { RawCluster } from './config.js';
import { defineEvent } from './define.js';

/** A cluster from the bootstrap (`addedViaApi: false`) or from cluster discovery. */
export const clusterAdded = defineEvent<
  'cluster/added',
  { cluster: RawCluster; addedViaApi: boolean; versionInfo: string }
>('cluster/added');

export const clusterUpdated = defineEvent<'cluster/updated', { cluster: RawCluster; versionInfo: string }>(
  'cluster/updated',
);

export const clusterRemoved = defineEvent<'cluster/removed', { name: string; versionInfo: string }>(
  'cluster/removed',
);

/**
 * A configuration or discovery update that failed validation. It is kept as history (a
 * NACK, not a crash) so `/events` and `config_dump` can show what was refused and why.
 */
export const updateRejected = defineEvent<
  'cluster/update-rejected',
  { resource: string; name: string; versionInfo: string; errors: string[] }
>('cluster/update-rejected');
