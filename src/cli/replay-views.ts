/**
 * Admin views of a replayed snapshot, rendered by the same pure views the live admin uses,
 * so `proxy replay --at N --view X` prints what `GET /X?at=N` printed. Host counters are
 * not events and are not in the log: offline they read as never incremented.
 */
import type { JsonObject } from '../../events/index.js';
import type { State } from '../../reducers/index.js';
import { renderClustersJson } from '../../views/clusters/json.js';
import { renderClustersText } from '../../views/clusters/text.js';
import { renderConfigDump } from '../../views/config-dump/render.js';
import { renderListeners } from '../../views/listeners/render.js';
import { redact } from '../../views/redact.js';
import { bodyText, json, type ViewResult } from '../../views/result.js';
import { renderRuntime } from '../../views/runtime/render.js';
import { renderServerInfo } from '../../views/server-info/render.js';
import { semanticView } from '../../views/snapshot-diff.js';
import { hotRestartVersion } from './hot-restart-version.js';
import type { Options } from '../options.js';
import { DEFAULT_OPTIONS } from './parse.js';
import { commandLineOptionsJson } from './server-info-options.js';

export const REPLAY_VIEWS = [
  'clusters',
  'config_dump',
  'runtime',
  'listeners',
  'server_info',
  'stats-control',
  'snapshot',
] as const;
export type ReplayView = (typeof REPLAY_VIEWS)[number];

/**
 * Renders `view` of `state`. `options` are the run's (from the log header), so
 * `server_info` shows the command line the recorded process had. Every view renders a
 * redacted copy: a log written before redaction existed still prints no secret.
 */
export function renderReplayView(
  view: ReplayView,
  format: 'text' | 'json',
  recorded: State,
  recordedOptions: JsonObject | null,
): ViewResult {
  const state = redact(recorded);
  const options = redact(recordedOptions);
  switch (view) {
    case 'clusters': {
      const figures = { hostStats: () => undefined };
      const out = format === 'json' ? renderClustersJson(state, figures) : renderClustersText(state, figures);
      return { ...out, body: bodyText(out.body) };
    }
    case 'config_dump': {
      const out = renderConfigDump(state, {
        includeEds: false,
        mask: null,
        resource: null,
        nameMatches: null,
      });
      return { ...out, body: bodyText(out.body) };
    }
    case 'runtime':
      return renderRuntime(state);
    case 'listeners':
      return renderListeners(state, format);
    case 'server_info': {
      const effective = { ...DEFAULT_OPTIONS, ...(options ?? {}) } as Options;
      return renderServerInfo(state, {
        now: state.at,
        hotRestartVersion: hotRestartVersion(effective),
        commandLineOptions: commandLineOptionsJson(effective),
      });
    }
    case 'stats-control':
      return json(state.stats);
    case 'snapshot':
      return json(semanticView(state));
  }
}
