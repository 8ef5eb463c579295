/** `proxy replay`'s command line: its usage text, and its arguments read and checked. */
import { parseArgs } from 'node:util';
import { splitList } from '../../views/events/filter.js';
import { parseTimePoint, TIME_FORMS } from '../../views/events/time.js';
import { REPLAY_VIEWS, type ReplayView } from './replay-views.js';

export const USAGE = `usage: proxy replay LOG|BUNDLE [--at POINT] [--view VIEW] [--format text|json] [--diff-from POINT]
                    [--skip-bad-lines] [--ignore-checkpoints]
       proxy replay LOG|BUNDLE --timeline [--since POINT] [--until POINT] [--type PREFIX] [--source NAME]
                    [--cluster NAME] [--listener NAME] [--host IP[:PORT]] [--format text|json|html]
       proxy replay LOG|BUNDLE --diff A..B [--format text|json]

  LOG                   an event log written with --event-log
  BUNDLE                an incident bundle from GET /debug/bundle (its event log is replayed)
  POINT                 ${TIME_FORMS}; times ago count back from the log's last event
  --at POINT            the snapshot after that sequence number or at that time; default: the end of the log
  --view VIEW           ${REPLAY_VIEWS.join(', ')} (default snapshot: the
                        whole semantic snapshot as JSON)
  --format text|json    for clusters, listeners, --timeline and --diff (default text); --timeline also
                        takes html: the admin's timeline page as one file, each event's JSON Patch included
  --diff-from POINT     print the semantic JSON Patch from that point to --at instead of a view
  --timeline            list the events, one line each: sequence number, local and UTC time, source,
                        type and what happened; filters may repeat or take a,b lists
  --since/--until POINT events after / up to that point (a sequence number excludes itself in --since)
  --type PREFIX         event types starting with PREFIX (health/, runtime/modified)
  --source NAME         events from that edge (admin, health_check, bootstrap, ...)
  --cluster/--listener  events about that cluster or listener
  --host IP[:PORT]      events about that host (an IP alone: any port)
  --diff A..B           what changed from point A to point B (B empty: the end): the events in
                        between, the changes in words, then the JSON Patch
  --skip-bad-lines      count malformed lines and go on instead of stopping at the first
  --ignore-checkpoints  fold every event from the start, ignoring checkpoint lines
`;

/** What `proxy replay` was asked, points still as written. */
export interface ReplayArgs {
  log: string;
  /** Points as written; read once the log's end is known. */
  at: string | null;
  diffFrom: string | null;
  diff: { from: string; to: string | null } | null;
  timeline: boolean;
  since: string | null;
  until: string | null;
  types: string[];
  sources: string[];
  clusters: string[];
  listeners: string[];
  hosts: string[];
  view: ReplayView;
  format: 'text' | 'json' | 'html';
  skipBadLines: boolean;
  ignoreCheckpoints: boolean;
}

/** Options whose value may be a time ago written with a leading dash (`--at -5m`). */
const POINT_OPTIONS = new Set(['--at', '--since', '--until', '--diff-from', '--diff']);

/**
 * `--at -5m` as `--at=-5m`: `parseArgs` takes a value starting with `-` for an option of
 * its own and refuses it, but a time ago is how people write it.
 */
function joinDashedPoints(argv: readonly string[]): string[] {
  const out: string[] = [];
  for (let i = 0; i < argv.length; i++) {
    const arg = argv[i] as string;
    const next = argv[i + 1];
    if (POINT_OPTIONS.has(arg) && next !== undefined && /^-\d/.test(next)) {
      out.push(`${arg}=${next}`);
      i += 1;
    } else out.push(arg);
  }
  return out;
}

/** The arguments, a request for help, or what is wrong with them (unknown options throw). */
export function parseReplayArgs(argv: string[]): ReplayArgs | { help: true } | { error: string } {
  const list = { type: 'string' as const, multiple: true as const, default: [] as string[] };
  const { values, positionals } = parseArgs({
    args: joinDashedPoints(argv),
    allowPositionals: true,
    options: {
      at: { type: 'string' },
      view: { type: 'string', default: 'snapshot' },
      format: { type: 'string', default: 'text' },
      'diff-from': { type: 'string' },
      diff: { type: 'string' },
      timeline: { type: 'boolean', default: false },
      since: { type: 'string' },
      until: { type: 'string' },
      type: list,
      source: list,
      cluster: list,
      listener: list,
      host: list,
      'skip-bad-lines': { type: 'boolean', default: false },
      'ignore-checkpoints': { type: 'boolean', default: false },
      help: { type: 'boolean', short: 'h', default: false },
    },
  });
  if (values.help) return { help: true };
  if (positionals.length !== 1) return { error: 'give exactly one event log file' };
  const view = values.view as ReplayView;
  if (!REPLAY_VIEWS.includes(view))
    return { error: `unknown view '${values.view}' (--view takes ${REPLAY_VIEWS.join(', ')})` };
  if (values.format !== 'text' && values.format !== 'json' && values.format !== 'html') {
    return {
      error: `unknown format '${values.format}' (--format takes text or json, and html with --timeline)`,
    };
  }
  if (values.format === 'html' && !values.timeline) {
    return { error: '--format html is for --timeline (the timeline page of the admin, written offline)' };
  }
  let diff: ReplayArgs['diff'] = null;
  if (values.diff !== undefined) {
    const [from, to, ...more] = values.diff.split('..');
    if (!from || to === undefined || more.length > 0) {
      return { error: `--diff takes A..B (two points, B may be empty for the end), not '${values.diff}'` };
    }
    diff = { from, to: to === '' ? null : to };
  }
  const points: Array<[string, string | undefined]> = [
    ['--at', values.at],
    ['--diff-from', values['diff-from']],
    ['--since', values.since],
    ['--until', values.until],
    ['--diff', diff?.from],
    ['--diff', diff?.to ?? undefined],
  ];
  for (const [flag, text] of points) {
    const problem = text === undefined ? null : parseTimePoint(text, 0);
    if (typeof problem === 'string') return { error: `${flag}: ${problem}` };
  }
  const modes = [values.timeline, diff !== null, values['diff-from'] !== undefined].filter(Boolean);
  if (modes.length > 1) return { error: '--timeline, --diff and --diff-from do not go together' };
  const filters = ['since', 'until', 'type', 'source', 'cluster', 'listener', 'host'] as const;
  const given = filters.filter((f) =>
    Array.isArray(values[f]) ? values[f].length > 0 : values[f] !== undefined,
  );
  if (!values.timeline && given.length > 0) {
    return { error: `--${given[0]} filters the --timeline; add --timeline` };
  }
  return {
    log: positionals[0] as string,
    at: values.at ?? null,
    diffFrom: values['diff-from'] ?? null,
    diff,
    timeline: values.timeline,
    since: values.since ?? null,
    until: values.until ?? null,
    types: splitList(values.type),
    sources: splitList(values.source),
    clusters: splitList(values.cluster),
    listeners: splitList(values.listener),
    hosts: splitList(values.host),
    view,
    format: values.format,
    skipBadLines: values['skip-bad-lines'],
    ignoreCheckpoints: values['ignore-checkpoints'],
  };
}
