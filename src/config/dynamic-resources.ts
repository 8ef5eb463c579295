/**
 * The compile step of a bootstrap's `dynamic_resources` (its CDS, LDS and ADS sources), and
 * what only the whole bootstrap can tell of every management server it names: an `ads` source
 * needs `ads_config`, and a gRPC or REST one a static cluster. Each source itself compiles in
 * `config-source.ts`.
 */
import type { Json, JsonObject } from '../../events/config.js';
import { objectOf } from '../../reducers/settings/values.js';
import { acting, checkFields, type FieldTable } from '../bootstrap/honoured.js';
import { fieldPath, Report } from '../bootstrap/report.js';
import {
  type ConfigSourceSpec,
  compileApiConfigSource,
  compileConfigSource,
  configSourceOf,
  type GrpcSource,
  type RestSource,
} from './config-source.js';
import { rdsNamesOf } from './rds-names.js';
import { clusterSdsRefs, listenerSdsRefs } from './sds-refs.js';

/** The sources of a bootstrap's `dynamic_resources`, as the xDS client serves them. */
export interface DynamicSources {
  /** `cds_config` and `lds_config`; null when absent (or not compiled: refused at load). */
  cds: ConfigSourceSpec | null;
  lds: ConfigSourceSpec | null;
  /** `ads_config` when it is a gRPC source; null without one or when it is not served. */
  ads: GrpcSource | null;
  /** Why `ads_config` is not served (its findings), for the client's log. */
  adsErrors: string[];
}

const dynamicMemo = new WeakMap<JsonObject, DynamicSources>();

/** The compiled `dynamic_resources` of a bootstrap, once per bootstrap (kept by its identity). */
export function compiledDynamicSources(bootstrap: JsonObject): DynamicSources {
  const hit = dynamicMemo.get(bootstrap);
  if (hit) return hit;
  const dynamic = objectOf(bootstrap.dynamic_resources);
  const sourceOf = (raw: Json | undefined) => (raw === undefined ? null : configSourceOf(objectOf(raw)));
  const report = new Report('dynamic_resources.ads_config');
  const api =
    dynamic.ads_config === undefined
      ? null
      : compileApiConfigSource(objectOf(dynamic.ads_config), '', report);
  const out: DynamicSources = {
    cds: sourceOf(dynamic.cds_config),
    lds: sourceOf(dynamic.lds_config),
    ads: api?.api === 'GRPC' ? api : null,
    adsErrors: report.failed ? report.errors : [],
  };
  dynamicMemo.set(bootstrap, out);
  return out;
}

const DYNAMIC_RESOURCES_FIELDS: FieldTable = acting('lds_config', 'cds_config', 'ads_config');

/** A compiled source and the field path that configures it. */
export interface SourceAt {
  path: string;
  spec: ConfigSourceSpec | GrpcSource | RestSource | undefined;
}

/**
 * `dynamic_resources`, and what only the whole bootstrap can tell: an `ads` source needs
 * `ads_config`, and a gRPC source names a static cluster (the management server must be
 * reachable before anything is discovered). `others` are management servers compiled
 * elsewhere (the load reporting server), held to the same rule.
 */
export function checkBootstrapSources(bootstrap: JsonObject, report: Report, others: SourceAt[] = []): void {
  const dynamic = objectOf(bootstrap.dynamic_resources);
  checkFields(dynamic, 'dynamic_resources', report, DYNAMIC_RESOURCES_FIELDS, 'DynamicResources');
  const sources: SourceAt[] = [...others];
  for (const key of ['lds_config', 'cds_config']) {
    if (dynamic[key] === undefined) continue;
    const path = `dynamic_resources.${key}`;
    sources.push({ path, spec: compileConfigSource(objectOf(dynamic[key]), path, report) });
  }
  if (dynamic.ads_config !== undefined) {
    const path = 'dynamic_resources.ads_config';
    const ads = compileApiConfigSource(objectOf(dynamic.ads_config), path, report);
    if (ads?.api === 'REST')
      report.error(`${path}.api_type`, 'aggregated discovery (ADS) takes api_type GRPC or DELTA_GRPC');
    sources.push({ path, spec: ads });
  }
  const clusters = (objectOf(bootstrap.static_resources).clusters ?? []) as Json[];
  const statics = new Set<string>();
  clusters.forEach((c, i) => {
    const cluster = objectOf(c);
    if (typeof cluster.name === 'string' && cluster.type !== 'EDS') statics.add(cluster.name);
    for (const ref of clusterSdsRefs(cluster, `static_resources.clusters[${i}]`))
      sources.push({ path: `${ref.path}.sds_config`, spec: configSourceOf(ref.configSource) ?? undefined });
    const eds = objectOf(cluster.eds_cluster_config).eds_config;
    // The cluster's own compile step reported this source's findings; only cross-checks here.
    if (eds !== undefined)
      sources.push({
        path: `static_resources.clusters[${i}].eds_cluster_config.eds_config`,
        spec: configSourceOf(objectOf(eds)) ?? undefined,
      });
  });
  const listeners = (objectOf(bootstrap.static_resources).listeners ?? []) as Json[];
  listeners.forEach((l, i) => {
    for (const ref of listenerSdsRefs(objectOf(l), `static_resources.listeners[${i}]`))
      sources.push({ path: `${ref.path}.sds_config`, spec: configSourceOf(ref.configSource) ?? undefined });
    for (const rds of rdsNamesOf(objectOf(l)))
      sources.push({
        path: `static_resources.listeners[${i}].${rds.path}`,
        spec: configSourceOf(rds.configSource) ?? undefined,
      });
  });
  for (const { path, spec } of sources) {
    if (!spec) continue;
    if ('kind' in spec && spec.kind === 'ads') {
      if (dynamic.ads_config === undefined)
        report.error(fieldPath(path, 'ads'), 'ads needs dynamic_resources.ads_config', 'missing');
      continue;
    }
    // A file source needs no management cluster.
    const api =
      'kind' in spec
        ? spec.kind === 'grpc'
          ? spec.grpc
          : spec.kind === 'rest'
            ? spec.rest
            : undefined
        : spec;
    if (api && !statics.has(api.cluster))
      report.error(
        path,
        `management cluster '${api.cluster}' is not a static, non-EDS cluster of static_resources`,
      );
  }
}
