import { parse as parseYaml } from 'yaml';
import type { JsonObject } from '../../../events/index.js';
import { bodyText, text } from '../../../views/result.js';
import { Report } from '../../bootstrap/report.js';
import type { ServerContext } from '../../context.js';
import { compileTapRequest, tapsOf } from '../../dataplane/http/tap.js';
import type { AdminRequest, AdminResponse, HandlerDescriptor } from '../registry.js';

/** Trace bytes a slow tap client may leave unread before further traces are dropped. */
const MAX_UNREAD_BYTES = 4 * 1024 * 1024;

/** A `/tap` body checked against this process: the session to attach, or the 400 to answer. */
function prepare(
  req: AdminRequest,
  ctx: ServerContext,
): AdminResponse | ReturnType<typeof compileTapRequest> {
  let body: unknown;
  try {
    body = parseYaml(req.body);
  } catch {
    body = undefined;
  }
  if (!body || typeof body !== 'object' || Array.isArray(body))
    return text('/tap requires a JSON/YAML body with config_id and tap_config (a TapRequest)\n', 400);
  const report = new Report('/tap');
  const compiled = compileTapRequest(body as JsonObject, report);
  if (!compiled) return text(`${report.errors.join('\n')}\n`, 400);
  // Workers would have to ship each trace to the primary; not built yet.
  if (ctx.workers)
    return text(
      '/tap is not available with --concurrency > 1 in this build: run with one worker to tap\n',
      400,
    );
  const taps = tapsOf(ctx);
  if (!taps.hasFilter(compiled.configId))
    return text(`Unknown config id '${compiled.configId}'. No extension has registered with this id.\n`, 400);
  if (taps.sessions.has(compiled.configId))
    return text(`An attached /tap admin stream already exists for '${compiled.configId}'. Detach it.\n`, 400);
  return compiled;
}

/**
 * `POST /tap` attaches a session to the tap filters with the body's `config_id`: the answer
 * stays open and carries one JSON trace (`http_buffered_trace`) per line for each matched
 * request, until the client disconnects, which detaches the session.
 */
export const tapHandlers: HandlerDescriptor[] = [
  {
    path: '/tap',
    help: 'tap a running proxy: POST a TapRequest (config_id, tap_config); traces stream back as JSON lines',
    mutates: true,
    params: [],
    handle: (req, ctx) => {
      const prepared = prepare(req, ctx);
      if (prepared === null || 'status' in prepared) return prepared ?? text('invalid /tap body\n', 400);
      return text('/tap answers by streaming traces; this adapter cannot stream\n', 400);
    },
    stream(req, res, ctx) {
      const prepared = prepare(req, ctx);
      if (prepared === null || 'status' in prepared) {
        const out = prepared ?? text('invalid /tap body\n', 400);
        res.status(out.status);
        res.end(bodyText(out.body));
        return;
      }
      const log = ctx.log.get('admin');
      const taps = tapsOf(ctx);
      const { configId, session } = prepared;
      let dropped = 0;
      taps.sessions.set(configId, {
        ...session,
        emit(trace) {
          if (res.writableLength > MAX_UNREAD_BYTES) {
            dropped += 1;
            return;
          }
          res.write(`${JSON.stringify(trace)}\n`);
        },
      });
      res.status(200);
      res.setHeader('content-type', 'application/json');
      res.flushHeaders();
      log.info({ configId }, 'tap session attached');
      res.on('close', () => {
        taps.sessions.delete(configId);
        log.info({ configId, dropped }, 'tap session detached');
      });
    },
  },
];
