/**
 * Time travel over the admin: the event history (`/events`, also as a server-sent event
 * stream), the semantic change between two snapshots (`/snapshots/diff`) and the event that
 * last changed a value (`/snapshots/blame`).
 */
import type { Response } from 'express';
import type { State } from '../../../reducers/index.js';
import { renderBlame } from '../../../views/events/blame.js';
import { renderDiff } from '../../../views/events/diff.js';
import { renderEvents, sseFrame } from '../../../views/events/list.js';
import { text } from '../../../views/result.js';
import { parsePointer, semanticDiff } from '../../../views/snapshot-diff.js';
import type { History } from '../../control/history.js';
import type { ServerContext } from '../../context.js';
import { usageLine } from '../dispatch.js';
import type { AdminRequest, AdminResponse, HandlerDescriptor } from '../registry.js';

/** Envelopes `/events` lists when no `limit` is given. */
const DEFAULT_LIMIT = 1000;
/** A comment line on idle streams keeps proxies and browsers from timing them out. */
const KEEPALIVE_MS = 15_000;

const noHistory = (): AdminResponse =>
  text('the event history is not running (the server did not start the event-log edge)\n', 503);

/** A non-negative integer query parameter; `fallback` when absent, null when malformed. */
function count(req: AdminRequest, name: string, fallback?: number): number | null | undefined {
  const raw = req.query.get(name);
  if (raw === null) return fallback;
  return /^\d+$/.test(raw) ? Number(raw) : null;
}

function usage(h: HandlerDescriptor, problem: string, status = 400): AdminResponse {
  return text(`${problem}\n${usageLine(h)}`, status);
}

const eventsHandler: HandlerDescriptor = {
  path: '/events',
  help: 'events after a sequence number, as JSON, or streamed as server-sent events with follow',
  mutates: false,
  params: [
    {
      name: 'since',
      help: 'list events with a sequence number above this (default: from the oldest retained)',
      kind: 'number',
    },
    { name: 'limit', help: `at most this many events (default ${DEFAULT_LIMIT})`, kind: 'number' },
    { name: 'type', help: 'only events whose type starts with this (e.g. health/)', kind: 'string' },
    { name: 'follow', help: 'stream past and future events as text/event-stream', kind: 'flag' },
  ],
  handle(req, ctx) {
    const history = ctx.history;
    if (!history) return noHistory();
    const query = eventsQuery(req, history);
    if ('problem' in query) return usage(eventsHandler, query.problem, query.status);
    return renderEvents({
      oldestSeq: history.oldestEnvelopeSeq(),
      latestSeq: history.latestSeq(),
      envelopes: matching(history, query.since, query.type).slice(0, query.limit),
    });
  },
  stream(req, res, ctx) {
    if (!req.query.has('follow'))
      return void writeAnswer(res, eventsHandler.handle(req, ctx) as AdminResponse);
    const history = ctx.history;
    if (!history) return void writeAnswer(res, noHistory());
    const query = eventsQuery(req, history);
    if ('problem' in query) return void writeAnswer(res, usage(eventsHandler, query.problem, query.status));
    follow(res, ctx, history, query.since, query.type);
  },
};

interface EventsQuery {
  since: number;
  limit: number;
  type: string;
}

function eventsQuery(req: AdminRequest, history: History): EventsQuery | { problem: string; status: number } {
  // Without `since`, from the oldest retained: after a restart that appends to an earlier
  // run's log, sequence numbers start above 1 and 'since 0' is gone.
  const since = count(req, 'since', history.oldestEnvelopeSeq() - 1);
  const limit = count(req, 'limit', DEFAULT_LIMIT);
  if (since === null || since === undefined)
    return { problem: "'since' must be a sequence number", status: 400 };
  if (limit === null || limit === undefined) return { problem: "'limit' must be a count", status: 400 };
  const oldest = history.oldestEnvelopeSeq();
  if (since < oldest - 1) {
    return {
      problem: `events after seq ${since} are no longer retained; the oldest kept is seq ${oldest} (ask with since=${oldest - 1})`,
      status: 410,
    };
  }
  return { since, limit, type: req.query.get('type') ?? '' };
}

function matching(history: History, since: number, type: string) {
  const all = history.envelopesSince(since);
  return type ? all.filter((env) => env.event.type.startsWith(type)) : all;
}

function writeAnswer(res: Response, out: AdminResponse): void {
  res.status(out.status);
  res.setHeader('content-type', out.contentType);
  res.end(out.body);
}

/** Streams retained events after `since`, then every new one, until the client goes away. */
function follow(res: Response, ctx: ServerContext, history: History, since: number, type: string): void {
  res.status(200);
  res.setHeader('content-type', 'text/event-stream');
  res.setHeader('cache-control', 'no-cache');
  res.setHeader('connection', 'keep-alive');
  res.flushHeaders();
  let last = since;
  const send = (env: { seq: number; event: { type: string } }) => {
    if (env.seq <= last) return;
    last = env.seq;
    if (!type || env.event.type.startsWith(type)) res.write(sseFrame(env as Parameters<typeof sseFrame>[0]));
  };
  for (const env of history.envelopesSince(since)) send(env);
  const subscription = ctx.store.ingested$.subscribe(send);
  const keepalive = setInterval(() => res.write(': keepalive\n\n'), KEEPALIVE_MS);
  keepalive.unref();
  res.on('close', () => {
    subscription.unsubscribe();
    clearInterval(keepalive);
  });
}

/** The state history holds for a sequence-number parameter, or the answer that explains why not. */
function snapshotParam(
  req: AdminRequest,
  name: string,
  h: HandlerDescriptor,
  history: History,
): State | AdminResponse {
  const seq = count(req, name);
  if (seq === undefined) return usage(h, `missing parameter '${name}'`);
  if (seq === null) return usage(h, `'${name}' must be a sequence number`);
  if (seq > history.latestSeq())
    return usage(h, `seq ${seq} has not happened yet; the latest is ${history.latestSeq()}`);
  const state = history.stateAt(seq);
  if (!state) {
    return usage(h, `no snapshot kept for seq ${seq}; the oldest kept is seq ${history.oldestSeq()}`, 410);
  }
  return state;
}

function isAnswer(value: State | AdminResponse): value is AdminResponse {
  return 'status' in value && 'contentType' in value;
}

const diffHandler: HandlerDescriptor = {
  path: '/snapshots/diff',
  help: 'what changed between two sequence numbers, as a JSON Patch keyed by name and address',
  mutates: false,
  params: [
    { name: 'from', help: 'sequence number of the earlier snapshot', kind: 'number', required: true },
    { name: 'to', help: 'sequence number of the later snapshot (default: the latest)', kind: 'number' },
  ],
  handle(req, ctx) {
    const history = ctx.history;
    if (!history) return noHistory();
    const from = snapshotParam(req, 'from', diffHandler, history);
    if (isAnswer(from)) return from;
    const toSeq = req.query.has('to') ? null : history.latestSeq();
    const to = toSeq === null ? snapshotParam(req, 'to', diffHandler, history) : history.stateAt(toSeq);
    if (!to) return noHistory();
    if (isAnswer(to)) return to;
    return renderDiff(
      Number(req.query.get('from')),
      toSeq ?? Number(req.query.get('to')),
      semanticDiff(from, to),
    );
  },
};

const blameHandler: HandlerDescriptor = {
  path: '/snapshots/blame',
  help: 'the event that last changed the value at a path such as /clusters/svc/hosts/10.0.0.1:80/weight',
  mutates: false,
  params: [
    {
      name: 'path',
      help: 'JSON pointer into the semantic snapshot (see /snapshots/diff)',
      kind: 'string',
      required: true,
    },
  ],
  handle(req, ctx) {
    const history = ctx.history;
    if (!history) return noHistory();
    const path = req.query.get('path') ?? '';
    const tokens = parsePointer(path);
    if (!tokens || tokens.length === 0) {
      return usage(
        blameHandler,
        `'path' must be a JSON pointer below the root, like /clusters/<name>/hosts/<ip:port>/weight`,
      );
    }
    return renderBlame(path, history.blame(tokens));
  },
};

export const eventsHandlers: HandlerDescriptor[] = [eventsHandler, diffHandler, blameHandler];
