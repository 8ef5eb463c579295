import { healthCheckFailed, healthCheckOk, shutdownRequested } from '../../../events/index.js';
import { INIT_COMPONENTS, type InitComponent, renderInitDump } from '../../../views/init-dump/render.js';
import { text } from '../../../views/result.js';
import {
  renderServerInfo,
  reportedState,
  type ServerInfoFigures,
  serverInfoData,
} from '../../../views/server-info/render.js';
import { hotRestartVersion } from '../../cli/hot-restart-version.js';
import { commandLineOptionsJson } from '../../cli/server-info-options.js';
import type { ServerContext } from '../../context-core.js';
import { eventHandler } from '../event-handler.js';
import type { AdminRequest, HandlerDescriptor } from '../registry.js';

function serverInfoFigures(req: AdminRequest, ctx: ServerContext): ServerInfoFigures {
  return {
    // The past is rendered as it looked then: uptime up to that snapshot.
    now: req.state === ctx.store.state ? ctx.store.scheduler.now() : req.state.at,
    hotRestartVersion: hotRestartVersion(ctx.options),
    commandLineOptions: commandLineOptionsJson(ctx.options),
  };
}

/** Server lifecycle: state, identity, health-check answers and shutdown. */
export const serverHandlers: HandlerDescriptor[] = [
  {
    path: '/ready',
    help: 'print server state, return 200 if LIVE, otherwise return 503',
    mutates: false,
    params: [],
    snapshotView: true,
    handle: (req) => {
      const state = reportedState(req.state);
      return text(`${state}\n`, state === 'LIVE' ? 200 : 503);
    },
  },
  {
    path: '/server_info',
    help: 'print server version/status information',
    mutates: false,
    params: [],
    snapshotView: true,
    handle: (req, ctx) => renderServerInfo(req.state, serverInfoFigures(req, ctx)),
    data: (req, ctx) => serverInfoData(req.state, serverInfoFigures(req, ctx)),
  },
  {
    path: '/hot_restart_version',
    help: 'print the hot restart compatibility version',
    mutates: false,
    params: [],
    handle: (_req, ctx) => text(hotRestartVersion(ctx.options)),
  },
  {
    path: '/init_dump',
    help: 'dump current proxy init manager information (experimental)',
    mutates: false,
    params: [
      {
        name: 'mask',
        help: 'The component whose unready targets to list',
        kind: 'enum',
        values: [...INIT_COMPONENTS],
      },
    ],
    snapshotView: true,
    handle: (req) => renderInitDump(req.state, req.query.get('mask') as InitComponent | null),
  },
  eventHandler({
    path: '/healthcheck/fail',
    help: 'cause the server to fail health checks',
    params: [],
    events: () => [healthCheckFailed({})],
  }),
  eventHandler({
    path: '/healthcheck/ok',
    help: 'cause the server to pass health checks',
    params: [],
    events: () => [healthCheckOk({})],
  }),
  {
    path: '/quitquitquit',
    help: 'exit the server',
    mutates: true,
    params: [],
    handle: (_req, ctx) => {
      ctx.store.dispatch(shutdownRequested({ reason: 'admin /quitquitquit' }), 'admin');
      // `connection: close` so the admin socket is not held open by this very client's keep-alive.
      return { ...text('OK\n'), headers: { connection: 'close' }, after: () => void ctx.shutdown(0) };
    },
  },
];
