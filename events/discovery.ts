import type { JsonObject, RawCluster, RawListener } from './config.js';
import { defineEvent } from './define.js';

/** The resource kinds of xDS: clusters, endpoints, listeners, route tables, secrets. */
export type DiscoveryKind = 'cds' | 'eds' | 'lds' | 'rds' | 'sds';

/**
 * A discovery response accepted (ACKed) at `versionInfo`; the resources it changed arrive as
 * their own events just before it. `names` are the resources it carried.
 */
export const discoveryAccepted = defineEvent('discovery/accepted').withPayload<{
  kind: DiscoveryKind;
  versionInfo: string;
  names: string[];
}>();

/**
 * `initial_fetch_timeout` passed before the first response for these resources: they stop
 * holding initialisation (a warming cluster becomes active with no members).
 */
export const discoveryTimedOut = defineEvent('discovery/fetch-timed-out').withPayload<{
  kind: DiscoveryKind;
  names: string[];
}>();

/**
 * What one accepted cluster discovery response changed, as one event (one snapshot, however
 * many clusters): clusters added (`addedViaApi`), changed, and gone from the response (or, in
 * delta xDS, named removed). `versions`: delta's own version of each cluster added or changed.
 */
export const clustersDiscovered = defineEvent('discovery/clusters').withPayload<{
  versionInfo: string;
  added: RawCluster[];
  updated: RawCluster[];
  removed: string[];
  versions?: Record<string, string>;
}>();

/**
 * Initialisation waits for these discovery targets (`cds:*`, `eds:<service>`, `lds:*`,
 * `rds:<table>`) until their first response or their initial fetch timeout.
 */
export const initWaiting = defineEvent('discovery/init-waiting').withPayload<{ targets: string[] }>();

/** These initialisation targets are done (answered, rejected or timed out). */
export const initReady = defineEvent('discovery/init-ready').withPayload<{ targets: string[] }>();

/** A listener from listener discovery (a new name, or a changed config of one it added). */
export const listenerAdded = defineEvent('listener/added').withPayload<{
  listener: RawListener;
  versionInfo: string;
}>();

/** A discovered listener left the discovery response: it drains, then closes. */
export const listenerRemoved = defineEvent('listener/removed').withPayload<{
  name: string;
  versionInfo: string;
}>();

/** A route table from route discovery; HTTP connection managers naming it use it for new requests. */
export const routeConfigSet = defineEvent('route/config-set').withPayload<{
  routeConfig: JsonObject & { name: string };
  versionInfo: string;
}>();

/**
 * A secret from secret discovery (a new name, or a changed content): TLS contexts naming it
 * by an `sds_config` use it for their next handshakes. It holds key material: every output
 * (event log, `/events`, `/config_dump`) redacts it by field name (views/redact.ts).
 */
export const secretSet = defineEvent('secret/set').withPayload<{
  secret: JsonObject & { name: string };
  versionInfo: string;
}>();

/** A discovered secret no TLS context names any more, or one the server removed. */
export const secretRemoved = defineEvent('secret/removed').withPayload<{
  name: string;
  versionInfo: string;
}>();

/**
 * Copies of the last rejected response of a kind (same version, same resources) were rejected
 * again, `count` of them since the last report: a management server re-sending a bad response
 * after each NACK is one of these every few seconds, not one rejection per copy. `resource`
 * names the rejected updates it repeats (`cluster/update-rejected`).
 */
export const rejectedAgain = defineEvent('discovery/rejected-again').withPayload<{
  kind: DiscoveryKind;
  resource: string;
  versionInfo: string;
  count: number;
  error: string;
}>();
