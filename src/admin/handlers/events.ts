/**
 * Time travel over the admin: the event history (`/events`, also as a server-sent event
 * stream), the semantic change between two snapshots (`/snapshots/diff`) and the event that
 * last changed a value (`/snapshots/blame`).
 */
import type { Response } from 'express';
import type { Envelope, ProxyEvent } from '../../../events/index.js';
import { eventTypes, type State } from '../../../reducers/index.js';
import { renderBlame } from '../../../views/events/blame.js';
import { renderDiff } from '../../../views/events/diff.js';
import { type EventFilter, matchesFilter, NO_FILTER, splitList } from '../../../views/events/filter.js';
import { renderEvents, sseFrame } from '../../../views/events/list.js';
import { parseTimePoint, TIME_FORMS, type TimePoint } from '../../../views/events/time.js';
import {
  renderTimelinePage,
  renderTimelineRow,
  type TimelineRow,
} from '../../../views/events/timeline-html.js';
import { redactPatch } from '../../../views/redact.js';
import { bodyText, text } from '../../../views/result.js';
import { parsePointer, semanticDiff } from '../../../views/snapshot-diff.js';
import type { ServerContext } from '../../context-core.js';
import type { History } from '../../control/history.js';
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

/** Events the HTML timeline shows when no `limit` is given: the latest ones. */
const HTML_LIMIT = 200;

const eventsHandler: HandlerDescriptor = {
  path: '/events',
  help: 'events after a sequence number, as JSON or an HTML timeline, or streamed as server-sent events with follow',
  mutates: false,
  params: [
    {
      name: 'since',
      help: 'list events with a sequence number above this (default: from the oldest retained)',
      kind: 'number',
    },
    {
      name: 'limit',
      help: `at most this many events (default ${DEFAULT_LIMIT}; the HTML timeline shows the latest ${HTML_LIMIT})`,
      kind: 'number',
    },
    {
      name: 'type',
      help: 'only events whose type starts with one of these (e.g. health/), comma separated',
      kind: 'string',
    },
    {
      name: 'source',
      help: 'only events from these edges (admin, health_check, ...), comma separated',
      kind: 'string',
    },
    { name: 'cluster', help: 'only events about these clusters, comma separated', kind: 'string' },
    { name: 'listener', help: 'only events about these listeners, comma separated', kind: 'string' },
    { name: 'host', help: 'only events about these hosts (ip or ip:port), comma separated', kind: 'string' },
    { name: 'from', help: `only events from this point on: ${TIME_FORMS}`, kind: 'string' },
    { name: 'until', help: 'only events up to this point (same forms as from)', kind: 'string' },
    {
      name: 'format',
      help: 'json (default) or html: the timeline page',
      kind: 'enum',
      values: ['json', 'html'],
    },
    {
      name: 'live',
      help: 'html: follow new events as they happen (default on without until)',
      kind: 'enum',
      values: ['on', 'off'],
    },
    { name: 'follow', help: 'stream past and future events as text/event-stream', kind: 'flag' },
  ],
  async handle(req, ctx) {
    const history = ctx.history;
    if (!history) return noHistory();
    const html = req.query.get('format') === 'html';
    const query = eventsQuery(req, history, ctx.store.scheduler.now());
    if ('problem' in query) {
      if (!html || query.status !== 400) return usage(eventsHandler, query.problem, query.status);
      return timelinePage(
        req,
        ctx,
        history,
        { since: history.oldestEnvelopeSeq() - 1, filter: NO_FILTER, limit: 0 },
        query.problem,
      );
    }
    if (html) return timelinePage(req, ctx, history, query);
    return renderEvents({
      oldestSeq: history.oldestEnvelopeSeq(),
      latestSeq: history.latestSeq(),
      envelopes: matching(history, query.since, query.filter).slice(0, query.limit ?? DEFAULT_LIMIT),
    });
  },
  stream(req, res, ctx) {
    if (!req.query.has('follow')) {
      // The adapter hands every /events request here; a failure answers 500 as the adapter would.
      Promise.resolve()
        .then(() => eventsHandler.handle(req, ctx))
        .then(
          (out) => writeAnswer(res, out),
          (err) => failed(res, ctx, err),
        );
      return;
    }
    const history = ctx.history;
    if (!history) return void writeAnswer(res, noHistory());
    const query = eventsQuery(req, history, ctx.store.scheduler.now());
    if ('problem' in query) return void writeAnswer(res, usage(eventsHandler, query.problem, query.status));
    // The served table is fixed for the stream: its snapshot views are listed once, not per frame.
    const views = snapshotViews(req);
    const frame =
      req.query.get('format') === 'html'
        ? async (env: Envelope<ProxyEvent>) => {
            const [row] = timelineRows(history, [env]);
            const html = renderTimelineRow(row as TimelineRow, views);
            return `id: ${env.seq}\ndata: ${JSON.stringify({ seq: env.seq, html })}\n\n`;
          }
        : sseFrame;
    follow(res, ctx, history, query.since, (env) => matchesFilter(env, query.filter), frame);
  },
};

interface EventsQuery {
  since: number;
  /** As given; each format has its own default. */
  limit: number | undefined;
  filter: EventFilter;
}

function eventsQuery(
  req: AdminRequest,
  history: History,
  now: number,
): EventsQuery | { problem: string; status: number } {
  // Without `since`, from the oldest retained: after a restart that appends to an earlier
  // run's log, sequence numbers start above 1 and 'since 0' is gone.
  const since = count(req, 'since', history.oldestEnvelopeSeq() - 1);
  const limit = count(req, 'limit');
  if (since === null || since === undefined)
    return { problem: "'since' must be a sequence number", status: 400 };
  if (limit === null) return { problem: "'limit' must be a count", status: 400 };
  const oldest = history.oldestEnvelopeSeq();
  if (since < oldest - 1) {
    return {
      problem: `events after seq ${since} are no longer retained; the oldest kept is seq ${oldest} (ask with since=${oldest - 1})`,
      status: 410,
    };
  }
  const points: Partial<Record<'from' | 'until', TimePoint>> = {};
  for (const name of ['from', 'until'] as const) {
    const text = req.query.get(name);
    if (text === null) continue;
    const point = parseTimePoint(text, now);
    if (typeof point === 'string') return { problem: `'${name}': ${point}`, status: 400 };
    points[name] = point;
  }
  const list = (name: string) => splitList(req.query.getAll(name));
  return {
    since,
    limit,
    filter: {
      types: list('type'),
      sources: list('source'),
      clusters: list('cluster'),
      listeners: list('listener'),
      hosts: list('host'),
      since: points.from ?? null,
      until: points.until ?? null,
    },
  };
}

function matching(history: History, since: number, filter: EventFilter): Envelope<ProxyEvent>[] {
  return history.envelopesSince(since).filter((env) => matchesFilter(env, filter));
}

/**
 * Each event with the change it made: the snapshot right after it against the one right
 * after the event before (what `/snapshots/diff?from=SEQ-1&to=SEQ` answers). Consecutive
 * events share the snapshot between them.
 */
function timelineRows(history: History, envelopes: readonly Envelope<ProxyEvent>[]): TimelineRow[] {
  let previous: { seq: number; state: State | null } | null = null;
  return envelopes.map((env) => {
    const before = previous?.seq === env.seq - 1 ? previous.state : history.stateAt(env.seq - 1);
    const after = history.stateAt(env.seq);
    previous = { seq: env.seq, state: after };
    return { env, patch: before && after ? redactPatch(semanticDiff(before, after)) : null };
  });
}

/** The admin views of the served table that render a past snapshot. */
function snapshotViews(req: AdminRequest): string[] {
  return req.table.filter((h) => h.snapshotView && !h.hidden).map((h) => h.path.slice(1));
}

/** Query parameters the live stream of the timeline page keeps: the filters that select events. */
const FOLLOWED = ['type', 'source', 'cluster', 'listener', 'host'];

async function timelinePage(
  req: AdminRequest,
  ctx: ServerContext,
  history: History,
  query: EventsQuery,
  problem?: string,
): Promise<AdminResponse> {
  const all = problem ? [] : matching(history, query.since, query.filter);
  const shown = all.slice(Math.max(0, all.length - (query.limit ?? HTML_LIMIT)));
  const follow = new URLSearchParams({ follow: '', format: 'html' });
  for (const name of FOLLOWED) for (const value of req.query.getAll(name)) follow.append(name, value);
  const live = req.query.get('live') ?? (req.query.has('until') ? 'off' : 'on');
  return renderTimelinePage({
    rows: timelineRows(history, shown),
    matched: all.length,
    oldestSeq: history.oldestEnvelopeSeq(),
    latestSeq: history.latestSeq(),
    query: req.query,
    views: snapshotViews(req),
    types: eventTypes,
    live: live === 'on' && !problem,
    followUrl: `events?${follow.toString()}`,
    now: ctx.store.scheduler.now(),
    problem,
  });
}

/** A handler failure: logged, never sent; a stream already started is cut. */
function failed(res: Response, ctx: ServerContext, err: unknown): void {
  ctx.log.get('admin').error({ err, path: '/events' }, 'admin handler failed');
  if (res.headersSent) res.destroy();
  else writeAnswer(res, text('internal error while handling /events; the proxy log has the details\n', 500));
}

function writeAnswer(res: Response, out: AdminResponse): void {
  res.status(out.status);
  res.setHeader('content-type', out.contentType);
  res.end(bodyText(out.body));
}

/**
 * Streams retained events after `since` that `keep` accepts, then every new one, until
 * the client goes away. New events are framed a turn after they enter the store, once the
 * reducer has folded them, so a frame that shows the event's change sees it; frames go
 * out in sequence order.
 */
function follow(
  res: Response,
  ctx: ServerContext,
  history: History,
  since: number,
  keep: (env: Envelope<ProxyEvent>) => boolean,
  frame: (env: Envelope<ProxyEvent>) => string | Promise<string>,
): void {
  res.status(200);
  res.setHeader('content-type', 'text/event-stream');
  res.setHeader('cache-control', 'no-cache');
  res.setHeader('connection', 'keep-alive');
  res.flushHeaders();
  let last = since;
  let closed = false;
  let queue: Promise<void> = Promise.resolve();
  const send = (env: Envelope<ProxyEvent>) => {
    if (env.seq <= last) return;
    last = env.seq;
    if (!keep(env)) return;
    queue = queue
      .then(() => new Promise<void>((resolve) => setImmediate(resolve)))
      .then(() => frame(env))
      .then((text) => {
        if (!closed) res.write(text);
      })
      .catch((err) => {
        closed = true;
        failed(res, ctx, err);
      });
  };
  for (const env of history.envelopesSince(since)) send(env);
  const subscription = ctx.store.ingested$.subscribe(send);
  const keepalive = setInterval(() => res.write(': keepalive\n\n'), KEEPALIVE_MS);
  keepalive.unref();
  res.on('close', () => {
    closed = true;
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
