/**
 * `/events?format=html`: the event timeline in a browser. Every event with its local and
 * UTC time, source, type and summary, its JSON Patch (collapsed), and links to each admin
 * view as it stood right after it (`?at=SEQ`). A form sets the filters as query
 * parameters; with live on, a server-sent event stream appends new rows as they happen.
 * Plain HTML, CSS and a few lines of script: nothing is fetched from elsewhere.
 */
import type { Operation } from 'fast-json-patch';
import type { Envelope } from '../../events/index.js';
import { HTML, type ViewResult } from '../result.js';
import { escapeHtml as esc } from '../stats/html-escape.js';
import { summarize } from './summary.js';
import { formatLocal, formatUtc } from './time.js';

/** One event and the change it made to the snapshot (null when that is no longer retained). */
export interface TimelineRow {
  env: Envelope<{ type: string }>;
  patch: readonly Operation[] | null;
}

/** The filter fields of the form, by query parameter name, as given. */
export const TIMELINE_FIELDS = [
  ['from', 'from', 'sequence number, 2026-11-23T10:00 (local), RFC 3339, or -10m'],
  ['until', 'until', 'same forms as from'],
  ['type', 'type', 'type prefixes, comma separated (health/, runtime/modified)'],
  ['source', 'source', 'edges, comma separated (admin, health_check, eds)'],
  ['cluster', 'cluster', 'cluster names, comma separated'],
  ['listener', 'listener', 'listener names, comma separated'],
  ['host', 'host', 'ip or ip:port, comma separated'],
  ['limit', 'limit', 'show at most this many of the latest matching events'],
] as const;

export interface TimelinePage {
  rows: readonly TimelineRow[];
  /** Matching events before the limit cut the oldest away. */
  matched: number;
  oldestSeq: number;
  latestSeq: number;
  /** Query values as given, for the form (only the filter fields are read). */
  query: URLSearchParams;
  /** The admin views that render a past snapshot (`clusters`, `config_dump`, ...). */
  views: readonly string[];
  /** Event types the filter suggests. */
  types: readonly string[];
  /** Whether the page streams new events in. */
  live: boolean;
  /** The stream the page follows (relative URL, without `since`). */
  followUrl: string;
  /** The current time (its zone offset is named on the page). */
  now: number;
  /** What is wrong with the filters, shown above an empty table. */
  problem?: string;
  /**
   * A page written by `proxy replay --timeline --format html`: no admin to link to, filter
   * or follow, so the filters are named instead of offered and nothing runs.
   */
  offline?: { log: string; filter: string };
}

/** One `<tr>`: also what the live stream sends for each new event. */
export function renderTimelineRow(row: TimelineRow, views: readonly string[]): string {
  const { env, patch } = row;
  const seq = env.seq;
  const local = formatLocal(env.at);
  // Offline (a replayed log) there is no admin to link to: no views, no column.
  const links =
    views.length === 0
      ? ''
      : `<td class='views'>${[
          ...views.map((v) => `<a href='${esc(v)}?at=${seq}'>${esc(v)}</a>`),
          `<a href='snapshots/diff?from=${seq - 1}&amp;to=${seq}'>diff</a>`,
        ].join(' ')}</td>`;
  const change =
    patch === null
      ? `<span class='muted'>change no longer retained</span>`
      : patch.length === 0
        ? `<span class='muted'>no change to the snapshot at this point</span>`
        : `<details class='patch'><summary>JSON Patch (${patch.length} ${patch.length === 1 ? 'operation' : 'operations'})</summary><pre>${esc(JSON.stringify(patch, null, 1))}</pre></details>`;
  return (
    `<tr id='seq-${seq}' class='event' data-seq='${seq}' data-type='${esc(env.event.type)}' data-family='${esc(env.event.type.split('/')[0] ?? '')}'>` +
    `<td class='seq'><a href='#seq-${seq}'>${seq}</a></td>` +
    `<td class='time'><span class='local'>${esc(local)}</span><br><span class='utc'>${esc(formatUtc(env.at))}</span></td>` +
    `<td class='source'>${esc(env.source)}</td>` +
    `<td class='type'>${esc(env.event.type)}</td>` +
    `<td class='what'><div class='summary'>${esc(summarize(env).text)}</div>${change}</td>` +
    `${links}</tr>`
  );
}

const STYLE = `
body { font-family: sans-serif; margin: 1em; }
h1 { font-size: 1.4em; margin: 0 0 .3em; }
.meta, .muted { color: #666; }
form#filters { margin: .6em 0; display: flex; flex-wrap: wrap; gap: .4em 1em; align-items: end; }
form#filters label { display: flex; flex-direction: column; font-size: .85em; }
form#filters input { width: 12em; }
table#timeline { border-collapse: collapse; width: 100%; }
#timeline th, #timeline td { border-bottom: 1px solid #ddd; padding: 3px 6px; text-align: left; vertical-align: top; }
#timeline th { background: #f0f0f0; position: sticky; top: 0; }
td.seq, td.time { font-family: monospace; white-space: nowrap; }
td.time .utc { color: #666; }
td.views a { margin-right: .4em; font-size: .85em; }
td.type { font-family: monospace; font-size: .9em; }
tr.event[data-family='health'] td.type { color: #a40; }
tr.event[data-family='server'] td.type { color: #06c; }
tr.event[data-family='runtime'] td.type { color: #608; }
tr.event[data-family='listener'] td.type { color: #070; }
tr.event.fresh { animation: fresh 3s ease-out; }
@keyframes fresh { from { background: #ffe9a8; } to { background: transparent; } }
details.patch pre { background: #f7f7f7; padding: .4em; max-width: 60em; overflow-x: auto; }
.problem { color: #b00; font-weight: bold; }
#live-status { font-size: .85em; color: #666; }
`;

/**
 * Follows the stream: each message is `{seq, html}`, a row rendered by the server, so the
 * page and the stream never disagree on how an event reads. A row already shown (a resumed
 * stream repeats) is skipped.
 */
const SCRIPT = `
(function () {
  var table = document.getElementById('timeline');
  var body = table.tBodies[0];
  var status = document.getElementById('live-status');
  var url = table.getAttribute('data-follow');
  var since = table.getAttribute('data-latest');
  if (table.getAttribute('data-live') !== 'on') { status.textContent = 'not following'; return; }
  var stream = new EventSource(url + '&since=' + since);
  stream.onopen = function () { status.textContent = 'following live'; };
  stream.onerror = function () { status.textContent = 'stream interrupted; retrying'; };
  stream.onmessage = function (message) {
    var data = JSON.parse(message.data);
    if (document.getElementById('seq-' + data.seq)) return;
    var empty = document.getElementById('empty');
    if (empty) empty.remove();
    body.insertAdjacentHTML('beforeend', data.html);
    var row = document.getElementById('seq-' + data.seq);
    if (row) row.classList.add('fresh');
    status.textContent = 'following live: last event seq ' + data.seq;
  };
})();
`;

function adminHead(
  page: TimelinePage,
  shown: string,
  zone: string,
  fields: string,
  types: string,
  liveChoice: string,
): string {
  return `<p class='meta'><a href='./'>admin home</a> · events retained: seq ${page.oldestSeq} to ${page.latestSeq} · ${shown} ·
times local (UTC${esc(zone)}, the proxy's zone) and UTC · <a href='events'>as JSON</a> · <span id='live-status'></span></p>
<form id='filters' method='get' action='events'>
<input type='hidden' name='format' value='html'>
${fields}
<label>live<select name='live'>${liveChoice}</select></label>
<button type='submit'>filter</button> <a href='events?format=html'>clear</a>
</form>
<datalist id='event-types'>${types}</datalist>`;
}

function offlineHead(
  offline: { log: string; filter: string },
  page: TimelinePage,
  shown: string,
  zone: string,
): string {
  return `<p class='meta'>replayed from <code>${esc(offline.log)}</code> · events seq ${page.oldestSeq} to ${page.latestSeq} · ${shown} ·
times local (UTC${esc(zone)}) and UTC</p>
<p class='meta'>filters: ${esc(offline.filter || 'none')}</p>`;
}

export function renderTimelinePage(page: TimelinePage): ViewResult {
  const value = (name: string) => esc(page.query.get(name) ?? '');
  const fields = TIMELINE_FIELDS.map(
    ([name, label, help]) =>
      `<label title='${esc(help)}'>${label}<input name='${name}' value='${value(name)}' placeholder='${esc(help.split(',')[0] ?? '')}'${name === 'type' ? " list='event-types'" : ''}></label>`,
  ).join('\n');
  const types = page.types.map((t) => `<option value='${esc(t)}'>`).join('');
  const liveChoice = ['on', 'off']
    .map((v) => `<option value='${v}'${(page.live ? 'on' : 'off') === v ? ' selected' : ''}>${v}</option>`)
    .join('');
  const rows =
    page.rows.length > 0
      ? page.rows.map((row) => renderTimelineRow(row, page.views)).join('\n')
      : `<tr id='empty'><td colspan='6' class='muted'>no event matches${page.live ? ' yet' : ''}</td></tr>`;
  const shown =
    page.matched > page.rows.length
      ? `showing the latest ${page.rows.length} of ${page.matched} matching events`
      : `${page.matched} matching ${page.matched === 1 ? 'event' : 'events'}`;
  const zone = formatLocal(page.now).slice(24);
  const body = `<!DOCTYPE html>
<html lang='en'>
<head>
<meta charset='utf-8'>
<title>Event timeline</title>
<style>${STYLE}</style>
</head>
<body>
<h1>Event timeline</h1>
${page.offline ? offlineHead(page.offline, page, shown, zone) : adminHead(page, shown, zone, fields, types, liveChoice)}
${page.problem ? `<p class='problem'>${esc(page.problem)}</p>` : ''}
<table id='timeline' data-live='${page.live ? 'on' : 'off'}' data-latest='${page.latestSeq}' data-follow='${esc(page.followUrl)}'>
<thead><tr><th>seq</th><th>time (local / UTC)</th><th>source</th><th>type</th><th>what happened</th>${page.offline ? '' : '<th>admin views at this point</th>'}</tr></thead>
<tbody>
${rows}
</tbody>
</table>
${page.offline ? '' : `<script>${SCRIPT}</script>`}
</body>
</html>
`;
  return { status: page.problem ? 400 : 200, contentType: HTML, body };
}
