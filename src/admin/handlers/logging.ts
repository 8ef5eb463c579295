import { type LogLevel, logLevelsChanged } from '../../../events/index.js';
import { activeLoggers, loggerLevels, loggingUsage } from '../../../views/logging/render.js';
import { text } from '../../../views/result.js';
import type { ServerContext } from '../../context-core.js';
import { reopenAccessLogs } from '../../dataplane/access-log/file-sink.js';
import { isLevelName, LEVEL_NAMES } from '../../logging/levels.js';
import type { AdminRequest, HandlerDescriptor } from '../registry.js';

/**
 * The levels a `/logging` query asks for: `level=` (every logger), `paths=a=l,b=l`, or
 * `<logger>=<level>` pairs; null when a name or level is not known.
 */
export function requestedLevels(
  query: URLSearchParams,
  names: readonly string[],
): Record<string, LogLevel> | null {
  const out: Record<string, LogLevel> = {};
  const set = (name: string, level: string): boolean => {
    if (!names.includes(name) || !isLevelName(level)) return false;
    out[name] = level;
    return true;
  };
  for (const [key, value] of query) {
    if (key === 'level') {
      if (!isLevelName(value)) return null;
      for (const name of names) out[name] = value;
    } else if (key === 'paths') {
      for (const pair of value.split(',').filter(Boolean)) {
        const [name = '', level = ''] = pair.split('=');
        if (!set(name, level)) return null;
      }
    } else if (!set(key, value)) return null;
  }
  return out;
}

function listing(req: AdminRequest, ctx: ServerContext) {
  return loggerLevels(req.state, ctx.log.list());
}

/** The loggers' levels now, and the levels the query asks for (null: a query that is not understood). */
function asked(req: AdminRequest, ctx: ServerContext) {
  const before = listing(req, ctx);
  const levels = requestedLevels(
    req.query,
    before.map(([n]) => n),
  );
  return { before, levels };
}

export const loggingHandlers: HandlerDescriptor[] = [
  {
    path: '/logging',
    help: 'query/change logging levels',
    mutates: true,
    params: [],
    events: (req, ctx) => {
      const { before, levels } = asked(req, ctx);
      if (!levels) return loggingUsage(LEVEL_NAMES, before);
      return Object.keys(levels).length > 0 ? [logLevelsChanged({ levels })] : [];
    },
    handle: (req, ctx) => {
      const { before, levels } = asked(req, ctx);
      if (!levels) return loggingUsage(LEVEL_NAMES, before);
      if (Object.keys(levels).length === 0) return text(activeLoggers(before));
      ctx.store.dispatch(logLevelsChanged({ levels }), 'admin');
      return text(activeLoggers(listing({ ...req, state: ctx.store.state }, ctx)));
    },
  },
  {
    path: '/reopen_logs',
    help: 'reopen access logs',
    mutates: true,
    params: [],
    async handle(_req, ctx) {
      ctx.log.reopen();
      reopenAccessLogs();
      ctx.workers?.reopenLogs();
      await ctx.eventLog.reopen();
      return text('OK\n');
    },
  },
];
