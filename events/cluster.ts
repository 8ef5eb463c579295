import type { RawCluster } from './config.js';
import { defineEvent } from './define.js';

/** A cluster from the bootstrap (`addedViaApi: false`) or from cluster discovery. */
export const clusterAdded = defineEvent('cluster/added').withPayload<{
  cluster: RawCluster;
  addedViaApi: boolean;
  versionInfo: string;
}>();

export const clusterUpdated = defineEvent('cluster/updated').withPayload<{
  cluster: RawCluster;
  versionInfo: string;
}>();

export const clusterRemoved = defineEvent('cluster/removed').withPayload<{
  name: string;
  versionInfo: string;
}>();

/**
 * A configuration or discovery update that failed validation. It is kept as history (a
 * NACK, not a crash) so `/events` and `config_dump` can show what was refused and why.
 */
export const updateRejected = defineEvent('cluster/update-rejected').withPayload<{
  resource: string;
  name: string;
  versionInfo: string;
  errors: string[];
}>();
