/**
 * `GET /debug/bundle`: one JSON document to attach to a bug report, with the event log
 * since a point (a header, a checkpoint of the snapshot at that point, then every event
 * after it: `proxy replay` opens the bundle as it opens a log) and what the admin shows
 * now: server info, config dump, stats, clusters, listeners, runtime and memory. Every
 * part is redacted as the admin and the event log redact it, and the whole once more.
 */
import type { Envelope, ProxyEvent } from '../../../events/index.js';
import { parseTimePoint, TIME_FORMS } from '../../../views/events/time.js';
import { redact } from '../../../views/redact.js';
import { text } from '../../../views/result.js';
import type { ServerContext } from '../../context-core.js';
import type { History } from '../../control/history.js';
import {
  checkpointLine,
  envelopeLine,
  headerLine,
  LOG_FORMAT,
  LOG_VERSION,
} from '../../control/log-format.js';
import { VERSION } from '../../version.js';
import { usageLine } from '../dispatch.js';
import type { AdminRequest, HandlerDescriptor } from '../registry.js';

export const BUNDLE_FORMAT = 'proxy-debug-bundle';
export const BUNDLE_VERSION = 1;

/** The admin pages a bundle holds, by the name it holds them under. */
const PARTS: ReadonlyArray<[name: string, path: string]> = [
  ['server_info', '/server_info'],
  ['config_dump', '/config_dump'],
  ['stats', '/stats'],
  ['clusters', '/clusters'],
  ['listeners', '/listeners'],
  ['runtime', '/runtime'],
  ['memory', '/memory'],
];

/** A page of the served table as data (its descriptor's `data`), or why there is none. */
async function part(req: AdminRequest, ctx: ServerContext, path: string): Promise<unknown> {
  const handler = req.table.find((h) => h.path === path);
  if (!handler?.data) return { error: `${path} is not served here` };
  try {
    return await handler.data(
      {
        method: 'GET',
        path,
        query: new URLSearchParams(),
        body: '',
        state: ctx.store.state,
        table: req.table,
      },
      ctx,
    );
  } catch (err) {
    return { error: `${path} failed: ${(err as Error).message}` };
  }
}

/**
 * The event log from `since` on, as a replayable ndjson text: the snapshot at `since` as a
 * checkpoint, then the retained events after it. An update a merge window held across
 * `since` and delivered after it is in the checkpoint's future and not in the replay.
 */
function eventLog(
  ctx: ServerContext,
  history: History,
  since: number,
  now: number,
): { text: string; from: number; events: number } {
  const state = history.stateAt(since) ?? ctx.store.state;
  const envelopes: Envelope<ProxyEvent>[] = history.envelopesSince(since);
  const lines = [
    headerLine({
      format: LOG_FORMAT,
      version: LOG_VERSION,
      product: VERSION,
      options: state.server.options,
      bootstrap: state.bootstrap?.config ?? null,
      opened_at: new Date(now).toISOString(),
    }),
    checkpointLine({ seq: since, at: state.at, state }),
    ...envelopes.map(envelopeLine),
  ];
  return { text: lines.join(''), from: since, events: envelopes.length };
}

/** The sequence number a bundle's log starts after: `since` as written, kept within what is retained. */
function startOf(history: History, since: string | null, now: number): number | string {
  const oldest = Math.max(history.oldestSeq(), history.oldestEnvelopeSeq() - 1);
  if (since === null) return oldest;
  const point = parseTimePoint(since, now);
  if (typeof point === 'string') return `'since': ${point}`;
  if ('seq' in point) return Math.min(Math.max(point.seq, oldest), history.latestSeq());
  // At a time: after the last event before it.
  return history.envelopesSince(oldest).findLast((env) => env.at < point.time)?.seq ?? oldest;
}

export const bundleHandler: HandlerDescriptor = {
  path: '/debug/bundle',
  help: 'one JSON document for a bug report: the event log since a point (proxy replay opens it), config dump, stats, clusters, server info, runtime; redacted',
  mutates: false,
  params: [
    {
      name: 'since',
      help: `the event log starts after this point (default: the oldest retained): ${TIME_FORMS}`,
      kind: 'string',
    },
  ],
  async handle(req, ctx) {
    const now = ctx.store.scheduler.now();
    const history = ctx.history;
    const start = history ? startOf(history, req.query.get('since'), now) : null;
    if (typeof start === 'string') return text(`${start}\n${usageLine(bundleHandler)}`, 400);
    const parts: Record<string, unknown> = {};
    for (const [name, path] of PARTS) parts[name] = await part(req, ctx, path);
    const log = history && start !== null ? eventLog(ctx, history, start, now) : null;
    const created = new Date(now).toISOString();
    const bundle = redact({
      format: BUNDLE_FORMAT,
      version: BUNDLE_VERSION,
      product: VERSION,
      created_at: created,
      event_log: log
        ? { from_seq: log.from, latest_seq: history?.latestSeq(), events: log.events, ndjson: log.text }
        : { error: 'the event history is not running in this process' },
      ...parts,
    });
    return {
      status: 200,
      contentType: 'application/json',
      body: `${JSON.stringify(bundle, null, 1)}\n`,
      headers: {
        'content-disposition': `attachment; filename="proxy-bundle-${created.replace(/[:.]/g, '-')}.json"`,
      },
    };
  },
};
