import type { Response } from 'express';
import { parse as parseYaml } from 'yaml';
import type { JsonObject } from '../../../events/index.js';
import { bodyText, text } from '../../../views/result.js';
import { Report } from '../../bootstrap/report.js';
import type { ServerContext } from '../../context-core.js';
import { compileTapRequest } from '../../dataplane/http/tap.js';
import type { TapSession } from '../../dataplane/http/tap-registry.js';
import type { WorkerPool } from '../../dataplane/workers/pool.js';
import type { AdminRequest, AdminResponse, HandlerDescriptor } from '../registry.js';

/** Trace bytes a slow tap client may leave unread before further traces are dropped. */
const MAX_UNREAD_BYTES = 4 * 1024 * 1024;

/** How long workers have to attach or detach a session. */
const WORKER_WAIT_MS = 2000;

type Prepared = NonNullable<ReturnType<typeof compileTapRequest>> & { body: JsonObject };

const unknownId = (id: string): AdminResponse =>
  text(`Unknown config id '${id}'. No extension has registered with this id.\n`, 400);

/** The workers that run the data plane beside this thread, or null when it runs here alone (or has not started). */
function workersOf(ctx: ServerContext): WorkerPool | null {
  return ctx.workers?.started ? ctx.workers : null;
}

/**
 * A `/tap` body checked: the session to attach, or the 400 to answer. Without workers the
 * tap filters are in this process and are checked here; with workers, they answer.
 */
function prepare(req: AdminRequest, ctx: ServerContext): AdminResponse | Prepared {
  let body: unknown;
  try {
    body = parseYaml(req.body);
  } catch {
    body = undefined;
  }
  if (!body || typeof body !== 'object' || Array.isArray(body))
    return text('/tap requires a JSON/YAML body with config_id and tap_config (a TapRequest)\n', 400);
  const taps = ctx.taps;
  // An id no filter has is the first thing to fix, whatever the rest of the body says.
  const id = (body as JsonObject).config_id;
  if (!workersOf(ctx) && typeof id === 'string' && id !== '' && !taps.hasFilter(id)) return unknownId(id);
  const report = new Report('/tap');
  const compiled = compileTapRequest(body as JsonObject, report);
  if (!compiled) return text(`${report.errors.join('\n')}\n`, 400);
  if (taps.sessions.has(compiled.configId))
    return text(`An attached /tap admin stream already exists for '${compiled.configId}'. Detach it.\n`, 400);
  return { ...compiled, body: body as JsonObject };
}

function answer(res: Response, out: AdminResponse): void {
  res.status(out.status);
  res.end(bodyText(out.body));
}

/**
 * `POST /tap` attaches a session to the tap filters with the body's `config_id`: the answer
 * stays open and carries one JSON trace (`http_buffered_trace`) per line for each matched
 * request, until the client disconnects, which detaches the session. With workers, this
 * thread's own filters record as without, and each worker sends its traces here, which
 * writes them to the client.
 */
export const tapHandlers: HandlerDescriptor[] = [
  {
    path: '/tap',
    help: 'tap a running proxy: POST a TapRequest (config_id, tap_config); traces stream back as JSON lines',
    mutates: true,
    params: [],
    handle: (req, ctx) => {
      const prepared = prepare(req, ctx);
      if ('status' in prepared) return prepared;
      return text('/tap answers by streaming traces; this adapter cannot stream\n', 400);
    },
    stream(req, res, ctx) {
      const prepared = prepare(req, ctx);
      if ('status' in prepared) return answer(res, prepared);
      const log = ctx.log.get('admin');
      const taps = ctx.taps;
      const pool = workersOf(ctx);
      const { configId, session: compiled } = prepared;
      let dropped = 0;
      const session: TapSession = {
        ...compiled,
        emit(trace) {
          if (res.writableLength > MAX_UNREAD_BYTES) {
            dropped += 1;
            return;
          }
          res.write(`${JSON.stringify(trace)}\n`);
        },
      };
      // Taken before the workers answer, so a second request for the id is refused meanwhile.
      taps.sessions.set(configId, session);
      res.on('close', () => {
        if (taps.sessions.get(configId) !== session) return;
        taps.sessions.delete(configId);
        if (pool) void pool.ask({ kind: 'tap', configId, request: null }, WORKER_WAIT_MS);
        log.info({ configId, dropped }, 'tap session detached');
      });
      const open = (): void => {
        res.status(200);
        res.setHeader('content-type', 'application/json');
        res.flushHeaders();
        log.info({ configId }, 'tap session attached');
      };
      if (!pool) return open();
      pool.onTapTrace ??= (id, trace) => taps.sessions.get(id)?.emit(trace);
      void pool.ask({ kind: 'tap', configId, request: prepared.body }, WORKER_WAIT_MS).then((answers) => {
        if (res.destroyed) return;
        if (taps.hasFilter(configId) || answers.some((a) => a.hasFilter)) return open();
        taps.sessions.delete(configId);
        answer(res, unknownId(configId));
      });
    },
  },
];
