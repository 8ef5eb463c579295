import type { JsonObject, RawBootstrap } from './config.js';
import { defineEvent } from './define.js';

/** Server lifecycle as `/ready` and `server_info.state` report it. */
export type ServerState = 'PRE_INITIALIZING' | 'INITIALIZING' | 'LIVE' | 'DRAINING';

/** The version of the reference's API a configuration was written in. */
export type ApiVersion = 'V2' | 'V3';

/**
 * The bootstrap as loaded, with the effective command-line options and the build version,
 * so that an event log opening with this event is self-contained.
 */
export const bootstrapLoaded = defineEvent('server/bootstrap-loaded').withPayload<{
  bootstrap: RawBootstrap;
  /** Effective `command_line_options` as `/server_info` prints them. */
  options: JsonObject;
  version: string;
  /** Files the bootstrap came from (empty for `--config-yaml` alone). */
  sources: string[];
  /** The version it was written in (absent in logs recorded before it was kept: V2). */
  apiVersion?: ApiVersion;
}>();

export const serverStateChanged = defineEvent('server/state-changed').withPayload<{ state: ServerState }>();

/** `POST /healthcheck/fail`: inbound health checks fail until `/healthcheck/ok`. */
export const healthCheckFailed = defineEvent('server/healthcheck-failed');
export const healthCheckOk = defineEvent('server/healthcheck-ok');

/** `POST /quitquitquit` or a termination signal. */
export const shutdownRequested = defineEvent('server/shutdown-requested').withPayload<{ reason: string }>();

/**
 * This process took over from a running epoch (`--restart-epoch` > 0): the first event after
 * its bootstrap, so a replay of a log that spans epochs knows where each one starts.
 */
export const hotRestarted = defineEvent('server/hot-restarted').withPayload<{
  epoch: number;
  parentEpoch: number;
  /** When epoch 0 started (ms since the epoch): `uptime_all_epochs` counts from here. */
  firstStartedAt: number;
}>();

/** What the parent epoch did after the handover, as it reported it to this one. */
export const hotRestartParent = defineEvent('server/hot-restart-parent').withPayload<{
  epoch: number;
  step: 'draining' | 'drained' | 'exited';
  /** Its downstream connections still open at this step. */
  connections: number;
}>();

/** The overload manager's actions this build takes (`proxy.` or `envoy.overload_actions.` + the name). */
export type OverloadActionKind =
  | 'shrink_heap'
  | 'stop_accepting_requests'
  | 'disable_http_keepalive'
  | 'stop_accepting_connections';

/** An overload action became active or inactive: a monitor's pressure crossed one of its triggers. */
export const overloadActionChanged = defineEvent('server/overload-action-changed').withPayload<{
  action: OverloadActionKind;
  active: boolean;
}>();

/** The drain before a stop is over: no connection left, or the drain time ran out. */
export const drainEnded = defineEvent('server/drain-ended').withPayload<{ connectionsLeft: number }>();
