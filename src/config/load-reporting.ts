/**
 * The compile step of `cluster_manager.load_stats_config`: where load reports go. The same
 * function runs at `--mode validate` and when the reporter starts.
 */
import type { JsonObject } from '../../events/config.js';
import { objectOf } from '../../reducers/settings/values.js';
import { Report } from '../bootstrap/report.js';
import { compileApiConfigSource, type GrpcSource } from './config-source.js';
import type { SourceAt } from './dynamic-resources.js';

export const LOAD_STATS_CONFIG_PATH = 'cluster_manager.load_stats_config';

/**
 * An `ApiConfigSource` with `api_type: GRPC` and one `envoy_grpc` service: the reference
 * reports load over gRPC only (its other types are an error there too). Whether its cluster is a static one of the bootstrap is
 * checked with the xDS sources (`checkBootstrapSources`). Undefined with findings otherwise.
 */
export function compileLoadStatsConfig(
  config: JsonObject,
  path: string,
  report: Report,
): GrpcSource | undefined {
  const api = compileApiConfigSource(config, path, report);
  if (api?.api === 'REST' || api?.delta) {
    report.error(`${path}.api_type`, 'load reporting (LRS) takes api_type GRPC', 'invalid');
    return undefined;
  }
  return api;
}

/** The bootstrap's load reporting source with its findings in `report`, for the bootstrap-wide checks. */
export function checkLoadStatsConfig(bootstrap: JsonObject, report: Report): SourceAt[] {
  const config = objectOf(bootstrap.cluster_manager).load_stats_config;
  if (config === undefined) return [];
  return [
    {
      path: LOAD_STATS_CONFIG_PATH,
      spec: compileLoadStatsConfig(objectOf(config), LOAD_STATS_CONFIG_PATH, report),
    },
  ];
}

/** The load reporting server of a bootstrap already validated, or null when it names none. */
export function loadStatsSourceOf(bootstrap: JsonObject): GrpcSource | null {
  const config = objectOf(bootstrap.cluster_manager).load_stats_config;
  if (config === undefined) return null;
  const report = new Report(LOAD_STATS_CONFIG_PATH);
  const source = compileLoadStatsConfig(objectOf(config), LOAD_STATS_CONFIG_PATH, report);
  return source && !report.failed ? source : null;
}
