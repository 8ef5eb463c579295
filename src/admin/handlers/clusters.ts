import { renderClustersHtml } from '../../../views/clusters/html.js';
import { clustersData, renderClustersJson } from '../../../views/clusters/json.js';
import { renderClustersText } from '../../../views/clusters/text.js';
import type { HandlerDescriptor } from '../registry.js';

export const clustersHandlers: HandlerDescriptor[] = [
  {
    path: '/clusters',
    help: 'upstream cluster status',
    mutates: false,
    params: [
      {
        name: 'format',
        help: 'Output format (html: a table per cluster, coloured by host state, with buttons for the usual mutations)',
        kind: 'enum',
        values: ['text', 'json', 'html'],
      },
      { name: 'refresh', help: 'html: seconds between reloads (default 5, 0 for none)', kind: 'number' },
    ],
    snapshotView: true,
    async handle(req, ctx) {
      const figures = await ctx.figures.read();
      const format = req.query.get('format');
      if (format === 'html') {
        const refresh = Number(req.query.get('refresh') ?? 5);
        const live = req.state === ctx.store.state;
        return renderClustersHtml(req.state, figures, {
          // A past snapshot or a read-only admin gets no buttons: they would act on now, or be refused.
          actions: live && !ctx.options.adminReadOnly ? req.table : [],
          now: ctx.store.scheduler.now(),
          refreshS: Math.max(0, refresh),
          at: live ? null : req.state.seq,
        });
      }
      return format === 'json'
        ? renderClustersJson(req.state, figures)
        : renderClustersText(req.state, figures);
    },
    data: async (req, ctx) => clustersData(req.state, await ctx.figures.read()),
  },
];
