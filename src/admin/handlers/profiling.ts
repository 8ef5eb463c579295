import { getHeapSnapshot } from 'node:v8';
import { memoryData, renderMemory } from '../../../views/memory/render.js';
import { json, text } from '../../../views/result.js';
import { collectWorkerMemory } from '../../dataplane/workers/collect.js';
import { memoryFigures } from '../../memory.js';
import { startProfiler, stopProfiler } from '../profilers.js';
import type { AdminResponse, HandlerDescriptor, ParamDescriptor } from '../registry.js';

const ENABLE: ParamDescriptor = {
  name: 'enable',
  help: 'enables the profiler',
  kind: 'enum',
  values: ['y', 'n'],
  required: true,
};

/** The reference's answer to a missing or bad `enable`. */
const ENABLE_USAGE = '?enable=<y|n>\n';

export const profilingHandlers: HandlerDescriptor[] = [
  {
    path: '/cpuprofiler',
    help: 'enable/disable the CPU profiler',
    mutates: true,
    params: [ENABLE],
    usage: ENABLE_USAGE,
    handle: async (req, ctx): Promise<AdminResponse> => {
      const enable = req.query.get('enable') === 'y';
      // Enabling a running profiler or disabling a stopped one changes nothing, as in the reference.
      if (enable && !ctx.profilers.isRunning('cpu')) {
        const problem = await startProfiler(ctx, 'cpu');
        if (problem) return text(`failure to start the profiler: ${problem}\n`, 500);
      } else if (!enable && ctx.profilers.isRunning('cpu')) {
        const { unwritten } = await stopProfiler(ctx, 'cpu');
        if (unwritten.length > 0) return text(`profiler stopped; ${unwritten.join('; ')}\n`, 500);
      }
      return text('OK\n');
    },
  },
  {
    path: '/heapprofiler',
    help: 'enable/disable the heap profiler',
    mutates: true,
    params: [ENABLE],
    usage: ENABLE_USAGE,
    handle: async (req, ctx): Promise<AdminResponse> => {
      const enable = req.query.get('enable') === 'y';
      if (enable) {
        if (ctx.profilers.isRunning('heap'))
          return text('Fail to start heap profiler: already started\n', 400);
        const problem = await startProfiler(ctx, 'heap');
        if (problem) return text(`Fail to start heap profiler: ${problem}\n`, 500);
        return text('Starting heap profiler\n');
      }
      if (!ctx.profilers.isRunning('heap')) return text('Fail to stop heap profiler: not started\n', 400);
      const { files, unwritten } = await stopProfiler(ctx, 'heap');
      if (unwritten.length > 0) return text(`Heap profiler stopped; ${unwritten.join('; ')}\n`, 500);
      const written =
        files.length === 1 ? `profile written to ${files[0]}` : `profiles written to ${files.join(', ')}`;
      return text(`Heap profiler stopped; ${written}\n`);
    },
  },
  {
    path: '/heap_dump',
    help: 'dump current proxy heap (a V8 heap snapshot; open it in Chrome DevTools, Memory tab)',
    mutates: false,
    params: [],
    handle: async () => {
      const chunks: Buffer[] = [];
      for await (const chunk of getHeapSnapshot()) chunks.push(chunk as Buffer);
      return { status: 200, contentType: 'application/octet-stream', body: Buffer.concat(chunks) };
    },
    stream: (_req, res) => {
      res.setHeader('content-type', 'application/octet-stream');
      res.setHeader('content-disposition', 'attachment; filename="proxy.heapsnapshot"');
      const snapshot = getHeapSnapshot();
      snapshot.on('error', () => res.destroy());
      snapshot.pipe(res);
    },
  },
  {
    path: '/memory',
    help: 'print current allocation/heap usage (with workers: each worker too)',
    mutates: false,
    params: [],
    handle: async (_req, ctx) => renderMemory(memoryFigures(), await collectWorkerMemory(ctx)),
    data: async (_req, ctx) => memoryData(memoryFigures(), await collectWorkerMemory(ctx)),
  },
  {
    path: '/contention',
    help: 'dump current proxy mutex contention stats (if enabled)',
    mutates: false,
    params: [],
    handle: (_req, ctx) => {
      const figures = ctx.contention;
      if (!figures)
        return text(
          'Mutex contention tracing is not enabled. To enable, run the proxy with flag --enable-mutex-tracing.',
        );
      return json({
        num_contentions: String(figures.numContentions),
        current_wait_cycles: String(figures.currentWaitNs),
        lifetime_wait_cycles: String(figures.lifetimeWaitNs),
      });
    },
  },
];
