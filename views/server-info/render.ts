import type { JsonObject, ServerState } from '../../events/index.js';
import { nodeSettings } from '../../reducers/settings/node.js';
import { stringOr } from '../../reducers/settings/values.js';
import type { State } from '../../reducers/state.js';
import { redact } from '../redact.js';
import { json, type ViewResult } from '../result.js';

/** What `/server_info` needs beside the snapshot. */
export interface ServerInfoFigures {
  /** Milliseconds on the store clock "now" (the snapshot's `at` when rendering the past). */
  now: number;
  hotRestartVersion: string;
  /** `command_line_options` when the snapshot carries none (a bootstrap event without them). */
  commandLineOptions: JsonObject;
}

/**
 * The state `/ready` and `/server_info` report: the lifecycle state, except that a LIVE
 * server whose health checks are failed (`/healthcheck/fail`) reports DRAINING, as the
 * reference does.
 */
export function reportedState(state: State): ServerState {
  return state.server.state === 'LIVE' && state.server.healthCheckFailed ? 'DRAINING' : state.server.state;
}

/** `major.minor.patch` of the second field of the five-field build version. */
function versionNumbers(version: string): { major_number: number; minor_number: number; patch: number } {
  const [major = 0, minor = 0, patch = 0] = (version.split('/')[1] ?? '')
    .split(/[.-]/)
    .slice(0, 3)
    .map((n) => Number.parseInt(n, 10) || 0);
  return { major_number: major, minor_number: minor, patch };
}

/** The bootstrap's `node`, with `--service-node/-cluster/-zone` taking precedence, every field printed. */
function nodeOf(state: State, options: JsonObject): JsonObject {
  const node = nodeSettings(state.bootstrap?.config);
  const zone = stringOr(options.service_zone, '');
  const locality = node.locality;
  const out: JsonObject = {
    id: stringOr(options.service_node, '') || node.id,
    cluster: stringOr(options.service_cluster, '') || node.cluster,
    metadata: node.metadata,
  };
  if (zone || Object.keys(locality).length > 0) out.locality = zone ? { ...locality, zone } : locality;
  out.user_agent_name = 'proxy';
  out.user_agent_build_version = { version: versionNumbers(state.server.version) };
  out.extensions = node.extensions;
  out.client_features = node.clientFeatures;
  out.listening_addresses = node.listeningAddresses;
  return out;
}

function seconds(ms: number): string {
  return `${Math.max(0, Math.floor(ms / 1000))}s`;
}

/**
 * `/server_info`: the server info record with every field printed, defaults included;
 * secrets redacted, also inside `--config-yaml`.
 */
export function renderServerInfo(state: State, figures: ServerInfoFigures): ViewResult {
  return json(serverInfoData(state, figures));
}

/** What `/server_info` prints, as data. */
export function serverInfoData(state: State, figures: ServerInfoFigures): JsonObject {
  const options =
    Object.keys(state.server.options).length > 0 ? state.server.options : figures.commandLineOptions;
  const uptime = seconds(figures.now - state.server.startedAt);
  const firstStartedAt = state.server.hotRestart?.firstStartedAt ?? state.server.startedAt;
  return redact({
    version: state.server.version,
    state: reportedState(state),
    uptime_current_epoch: uptime,
    uptime_all_epochs: seconds(figures.now - firstStartedAt),
    hot_restart_version: figures.hotRestartVersion,
    command_line_options: options,
    node: nodeOf(state, options),
  });
}
