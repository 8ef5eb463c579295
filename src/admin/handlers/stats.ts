import { recentLookupsCleared, recentLookupsDisabled, recentLookupsEnabled } from '../../../events/index.js';
import { statsData, streamStats } from '../../../views/stats/index.js';
import { renderRecentLookups } from '../../../views/stats/recent-lookups.js';
import { builtInForType, CONFIG_TYPE } from '../../bootstrap/extensions.js';
import type { ServerContext } from '../../context-core.js';
import { collectRecentLookups } from '../../dataplane/workers/collect.js';
import { eventHandler } from '../event-handler.js';
import type { AdminRequest, HandlerDescriptor, ParamDescriptor } from '../registry.js';

const HYSTRIX_SINK =
  builtInForType('envoy.stats_sinks', CONFIG_TYPE.hystrixSink)?.name ?? CONFIG_TYPE.hystrixSink;
const NOT_AVAILABLE = `hystrix_event_stream is not available: add the stats sink ${HYSTRIX_SINK} to the bootstrap stats_sinks to enable it\n`;

// `format`, `type` and `histogram_buckets` are declared as strings so the view answers bad
// values with the reference's own usage lines.
const STATS_PARAMS: ParamDescriptor[] = [
  {
    name: 'usedonly',
    kind: 'flag',
    help: 'Only include stats that have been written by system since restart',
  },
  { name: 'filter', kind: 'string', help: 'Regular expression (RE2) for filtering stats; partial match' },
  {
    name: 'format',
    kind: 'string',
    help: 'Format to use: html, active-html, text (default), json or prometheus',
  },
  {
    name: 'type',
    kind: 'string',
    help: 'Stat types to include: All, Counters, Gauges, Histograms, TextReadouts',
  },
  {
    name: 'histogram_buckets',
    kind: 'string',
    help: 'Histogram bucket display mode: cumulative, disjoint, or none (quantile summary)',
  },
  {
    name: 'text_readouts',
    kind: 'flag',
    help: 'With prometheus: text readouts as gauges with a text_value label',
  },
  {
    name: 'names',
    kind: 'string',
    help: 'With prometheus: proxy or envoy, the prefix of metric and tag label names (default: --prometheus-names)',
  },
];

/**
 * A recent-lookup switch: with workers, answered once each has applied it, since the
 * lookups it governs happen there.
 */
function lookupSwitch(spec: Parameters<typeof eventHandler>[0]): HandlerDescriptor {
  const handler = eventHandler(spec);
  return {
    ...handler,
    async handle(req, ctx) {
      const response = await handler.handle(req, ctx);
      await ctx.workers?.settled();
      return response;
    },
  };
}

/** Every thread's stats in `format` (none: the one `?format=` asks for). */
async function statsIn(req: AdminRequest, ctx: ServerContext, format?: 'prometheus') {
  const runtime = ctx.statsRuntime;
  return streamStats(
    await runtime.forQuery(),
    runtime.tags,
    req.query,
    format,
    ctx.options.prometheusNames,
    runtime.buckets,
  );
}

/** `/stats` in every format, `/stats/prometheus`, recent lookups and the hystrix stream. */
export const statsHandlers: HandlerDescriptor[] = [
  {
    path: '/stats',
    help: 'print server stats',
    mutates: false,
    params: STATS_PARAMS,
    handle: (req, ctx) => statsIn(req, ctx),
    async data(_req, ctx) {
      return statsData(await ctx.statsRuntime.forQuery());
    },
  },
  {
    path: '/stats/prometheus',
    help: 'print server stats in prometheus format',
    mutates: false,
    params: STATS_PARAMS.filter((p) => ['usedonly', 'filter', 'text_readouts', 'names'].includes(p.name)),
    handle: (req, ctx) => statsIn(req, ctx, 'prometheus'),
  },
  {
    path: '/stats/recentlookups',
    help: 'Show recent stat-name lookups',
    mutates: false,
    params: [],
    handle: async (_req, ctx) => renderRecentLookups(await collectRecentLookups(ctx)),
  },
  lookupSwitch({
    path: '/stats/recentlookups/clear',
    help: 'clear list of stat-name lookups and counter',
    params: [],
    events: () => [recentLookupsCleared({})],
  }),
  lookupSwitch({
    path: '/stats/recentlookups/disable',
    help: 'disable recording of reset stat-name lookup names',
    params: [],
    events: () => [recentLookupsDisabled({})],
  }),
  lookupSwitch({
    path: '/stats/recentlookups/enable',
    help: 'enable recording of reset stat-name lookup names',
    params: [],
    events: () => [recentLookupsEnabled({})],
  }),
  {
    path: '/hystrix_event_stream',
    help: 'send hystrix event stream',
    mutates: false,
    params: [],
    handle: (_req, ctx) =>
      ctx.statsRuntime.hystrix
        ? { status: 200, contentType: 'text/event-stream', body: '' }
        : { status: 404, contentType: 'text/plain; charset=UTF-8', body: NOT_AVAILABLE },
    stream(_req, res, ctx) {
      const hystrix = ctx.statsRuntime.hystrix;
      if (hystrix) hystrix.attach(res);
      else res.status(404).type('text/plain; charset=UTF-8').send(NOT_AVAILABLE);
    },
  },
];
