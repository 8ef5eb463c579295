import { renderClustersJson } from '../../../views/clusters/json.js';
import { renderClustersText } from '../../../views/clusters/text.js';
import type { HandlerDescriptor } from '../registry.js';

export const clustersHandlers: HandlerDescriptor[] = [
  {
    path: '/clusters',
    help: 'upstream cluster status',
    mutates: false,
    params: [{ name: 'format', help: 'Output format', kind: 'enum', values: ['text', 'json'] }],
    snapshotView: true,
    async handle(req, ctx) {
      const figures = await ctx.figures.read();
      return req.query.get('format') === 'json'
        ? renderClustersJson(req.state, figures)
        : renderClustersText(req.state, figures);
    },
  },
];
