import { shortDuration } from '../events/time.js';
import { type EndpointSummary, listed } from '../help/render.js';
import { HTML, type ViewResult } from '../result.js';
import { escapeHtml as esc } from '../stats/html-escape.js';
import type { HomeSummary } from './summary.js';

function input(param: EndpointSummary['params'][number]): string {
  const label = `<label title='${esc(param.help)}'>${esc(param.name)} `;
  if (param.kind === 'flag')
    return `${label}<input type='checkbox' name='${esc(param.name)}' value=''></label>`;
  if (param.kind === 'enum') {
    // An empty choice submits `name=`, which the adapter reads as "not given".
    const options = ['', ...(param.values ?? [])].map((v) => `<option value='${esc(v)}'>${esc(v)}</option>`);
    return `${label}<select name='${esc(param.name)}'>${options.join('')}</select></label>`;
  }
  const type = param.kind === 'number' ? 'number' : 'text';
  return `${label}<input type='${type}' name='${esc(param.name)}' size='12'></label>`;
}

/** A mutation as a form: a button named for its path, inputs for its parameters, sent with POST. */
export function postForm(e: EndpointSummary, attributes = ''): string {
  const target = esc(e.path.slice(1));
  const inputs = e.params.map(input).join(' ');
  return `<form action='${target}' method='post'${attributes}><button>${target}</button> ${inputs}</form>`;
}

/** A read-only admin refuses every mutation: their buttons are shown, but cannot be pressed. */
function refusedForm(e: EndpointSummary): string {
  const target = esc(e.path.slice(1));
  return `<form><button disabled title='refused: --admin-read-only'>${target}</button> <span class='meta'>(read-only admin)</span></form>`;
}

function row(e: EndpointSummary, readOnly: boolean): string {
  // Relative links: the page works behind a path prefix too.
  const target = esc(e.path.slice(1));
  const inputs = e.params.map(input).join(' ');
  let cell: string;
  if (e.mutates) {
    cell = readOnly ? refusedForm(e) : postForm(e);
  } else if (e.params.length > 0) {
    cell = `<form action='${target}' method='get'><a href='${target}'>${target}</a> ${inputs} <button>go</button></form>`;
  } else {
    cell = `<a href='${target}'>${target}</a>`;
  }
  return `<tr class='home-row'><td class='home-data'>${cell}</td><td class='home-data'>${esc(e.help)}</td></tr>`;
}

const STATE_COLOURS: Record<string, string> = { LIVE: '#2e7d32', DRAINING: '#e65100' };

function parentLine(parent: NonNullable<HomeSummary['parent']>): string {
  const connections = parent.step === 'draining' ? `, ${parent.connections} connections left` : '';
  return ` <span class='meta'>(epoch ${parent.epoch}: ${esc(parent.step)}${connections})</span>`;
}

/** The server at a glance: what an operator checks first, above the list of endpoints. */
function status(s: HomeSummary, readOnly: boolean): string {
  const colour = STATE_COLOURS[s.state] ?? '#555';
  const drain = s.drain
    ? ` <span class='meta'>listeners draining${s.drain.inboundOnly ? ' (inbound only)' : ''}${s.drain.graceful ? ', graceful' : ''}</span>`
    : '';
  const listeners = s.listeners
    .map(
      (l) =>
        `<tr><td class='home-data'>${esc(l.name)}</td><td class='home-data address'>${esc(l.address)}</td><td class='home-data'>${esc(l.state)}</td></tr>`,
    )
    .join('\n');
  const unhealthy = s.hosts - s.healthyHosts;
  return `<section id='status'>
<p class='status-line'><span id='server-state' style='background:${colour}'>${esc(s.state)}</span>${drain}${readOnly ? ` <span id='read-only' class='meta'>admin read-only</span>` : ''}</p>
<table class='facts'>
<tr><th>version</th><td id='version'>${esc(s.version)}</td></tr>
<tr><th>uptime</th><td id='uptime'>${shortDuration(s.uptimeMs)}</td></tr>
<tr><th>hot-restart epoch</th><td id='epoch'>${s.epoch}${s.parent ? parentLine(s.parent) : ''}</td></tr>
<tr><th>clusters</th><td id='clusters'><a href='clusters?format=html'>${s.clusters} ${s.clusters === 1 ? 'cluster' : 'clusters'}</a>, <span id='healthy-hosts'>${s.healthyHosts} of ${s.hosts} hosts healthy</span>${unhealthy > 0 ? ` <span class='bad'>(${unhealthy} not)</span>` : ''}</td></tr>
<tr><th>events</th><td><a id='timeline' href='events?format=html'>event timeline</a> <span class='meta'>(${s.seq} events so far)</span></td></tr>
</table>
<h2>Listeners</h2>
${s.listeners.length > 0 ? `<table class='home-table listeners'><thead><tr><th class='home-data'>name</th><th class='home-data'>address</th><th class='home-data'>state</th></tr></thead><tbody>\n${listeners}\n</tbody></table>` : `<p class='meta'>no listener</p>`}
</section>`;
}

/**
 * The admin home page: the server's state at the top, then one row per listed endpoint, a
 * link for reads and a POST form (with inputs for its parameters) for mutations, so a
 * browser never mutates with GET; a read-only admin shows its mutations' buttons disabled.
 */
export function renderHome(
  endpoints: readonly EndpointSummary[],
  summary: HomeSummary,
  options: { readOnly: boolean } = { readOnly: false },
): ViewResult {
  const rows = listed(endpoints)
    .filter((e) => e.path !== '/')
    .map((e) => row(e, options.readOnly))
    .join('\n');
  const body = `<!DOCTYPE html>
<html lang='en'>
<head>
<meta charset='utf-8'>
<title>Proxy Admin</title>
<style>
.home-table { font-family: sans-serif; font-size: medium; border-collapse: collapse; }
.home-data { border: 1px solid #ddd; padding: 4px 8px; text-align: left; }
.home-row:nth-child(even) { background-color: #f4f4f4; }
form { margin: 0; }
.home-nav { font-family: sans-serif; }
body { font-family: sans-serif; margin: 1em; }
h1 { font-size: 1.4em; margin: 0 0 .4em; }
h2 { font-size: 1.1em; margin: 1em 0 .3em; }
#server-state { color: #fff; font-weight: bold; padding: 2px 10px; border-radius: 4px; font-size: 1.2em; }
.facts th { text-align: left; padding: 2px 12px 2px 0; font-weight: normal; color: #555; }
.facts td, .address { font-family: monospace; }
.meta { color: #666; font-family: sans-serif; }
.bad { color: #b71c1c; }
</style>
</head>
<body>
<h1>Proxy admin</h1>
${status(summary, options.readOnly)}
<h2>Endpoints</h2>
<p class='home-nav'>Pictures: <a href='events?format=html'>event timeline</a> · <a href='stats?format=active-html'>active stats</a> · <a href='clusters?format=html'>clusters</a></p>
<table class='home-table'>
<thead><tr><th class='home-data'>Command</th><th class='home-data'>Description</th></tr></thead>
<tbody>
${rows}
</tbody>
</table>
</body>
</html>
`;
  return { status: 200, contentType: HTML, body };
}
