/**
 * What the snapshot says should be discovered: CDS and LDS from `dynamic_resources`, EDS for
 * each EDS cluster, RDS for each HCM with `rds`, SDS for each TLS context's `sds_config`.
 */
import type { JsonObject } from '../../../events/config.js';
import type { State } from '../../../reducers/index.js';
import { compiledCluster } from '../../config/cluster.js';
import { type ConfigSourceSpec, configSourceOf } from '../../config/config-source.js';
import type { DynamicSources } from '../../config/dynamic-resources.js';
import { rdsNamesOf } from '../../config/rds-names.js';
import { clusterSdsRefs, listenerSdsRefs } from '../../config/sds-refs.js';
import { type ResourceKind, TYPE_URLS } from './types.js';

/** One type on one transport: the names wanted (null: all) and their source. */
export interface Want {
  kind: ResourceKind;
  source: ConfigSourceSpec;
  names: Set<string> | null;
  /** The transport key and the type URL: one watch. */
  key: string;
}

/**
 * Every watch the state needs, one per transport and type URL; `keyOf` names the transport of
 * a source (null: it has none). `waiting`: discovered clusters and listeners not applied yet,
 * whose secrets are wanted too.
 */
export function wants(
  state: State,
  dynamic: DynamicSources,
  keyOf: (kind: ResourceKind, source: ConfigSourceSpec) => string | null,
  waiting: { clusters: JsonObject[]; listeners: JsonObject[] } = { clusters: [], listeners: [] },
): Want[] {
  const out = new Map<string, Want>();
  const want = (kind: ResourceKind, source: ConfigSourceSpec | null, name: string | null) => {
    if (!source) return;
    const key = `${keyOf(kind, source)}|${TYPE_URLS[source.resourceVersion][kind]}`;
    let w = out.get(key);
    if (!w) {
      w = { kind, source, names: name === null ? null : new Set(), key };
      out.set(key, w);
    }
    if (name !== null) w.names?.add(name);
  };
  want('cds', dynamic.cds, null);
  want('lds', dynamic.lds, null);
  for (const cluster of Object.values(state.clusters)) {
    const eds = compiledCluster(cluster.config).eds;
    if (eds) want('eds', eds.source, eds.serviceName);
  }
  const listeners = [...Object.values(state.listeners).map((l) => l.config), ...waiting.listeners];
  for (const listener of listeners) {
    for (const { name, configSource } of rdsNamesOf(listener))
      want('rds', configSourceOf(configSource), name);
    for (const ref of listenerSdsRefs(listener)) want('sds', configSourceOf(ref.configSource), ref.name);
  }
  const clusters = [...Object.values(state.clusters).map((c) => c.config), ...waiting.clusters];
  for (const cluster of clusters)
    for (const ref of clusterSdsRefs(cluster)) want('sds', configSourceOf(ref.configSource), ref.name);
  return [...out.values()];
}
