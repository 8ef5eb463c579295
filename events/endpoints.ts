import type { HostSpec, JsonObject } from './config.js';
import { defineEvent } from './define.js';

/**
 * The whole member set of a cluster, from DNS resolution, endpoint discovery or the
 * bootstrap. A change of membership is never delayed by the merge window.
 */
export const hostsSet = defineEvent('endpoints/hosts-set').withPayload<{
  cluster: string;
  hosts: HostSpec[];
  versionInfo: string;
}>();

/**
 * Weight, metadata or discovery health of existing members changed without any member
 * arriving or leaving: mergeable within `update_merge_window`.
 */
export const hostsUpdated = defineEvent('endpoints/hosts-updated').withPayload<{
  cluster: string;
  updates: Array<{
    address: string;
    weight?: number;
    metadata?: JsonObject;
    edsHealth?: HostSpec['edsHealth'];
  }>;
}>();
