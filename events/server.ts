import type { JsonObject, RawBootstrap } from './config.js';
import { defineEvent } from './define.js';

/** Server lifecycle as `/ready` and `server_info.state` report it. */
export type ServerState = 'PRE_INITIALIZING' | 'INITIALIZING' | 'LIVE' | 'DRAINING';

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
}>();

export const serverStateChanged = defineEvent('server/state-changed').withPayload<{ state: ServerState }>();

/** `POST /healthcheck/fail`: inbound health checks fail until `/healthcheck/ok`. */
export const healthCheckFailed = defineEvent('server/healthcheck-failed');
export const healthCheckOk = defineEvent('server/healthcheck-ok');

/** `POST /quitquitquit` or a termination signal. */
export const shutdownRequested = defineEvent('server/shutdown-requested').withPayload<{ reason: string }>();
