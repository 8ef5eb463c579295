/**
 * `/clusters?format=html`: per cluster a table of its hosts with health, weight, success
 * rate and request rate, each row coloured by the host's state, so a flapping or ejected
 * host stands out at a glance. The page reloads itself every few seconds.
 */

/**
 * The buttons post with the page's own fetch and reload it, so the page shows what the
 * mutation changed (the answer stays in session storage over the reload); without script
 * the forms post as plain forms.
 *
 * Request rates: host counters are totals, and a rate needs two readings. The page keeps
 * its previous reading in the tab's session storage and rates the change since it (when
 * at least a second old); without one, it reads the page once more a second later and
 * rates the change in between. The server keeps nothing per viewer. A total that went
 * down (`/reset_counters`) is not rated.
 */
const SCRIPT = `
(function () {
  var key = 'proxy-clusters-reading';
  var now = Number(document.body.getAttribute('data-now'));
  var cells = Array.prototype.slice.call(document.querySelectorAll('td.rate'));
  function readTotals(doc) {
    var out = {};
    Array.prototype.forEach.call(doc.querySelectorAll('td.rate'), function (c) {
      out[c.getAttribute('data-host')] = Number(c.getAttribute('data-total'));
    });
    return out;
  }
  var totals = readTotals(document);
  function fill(from, to) {
    cells.forEach(function (c) {
      var host = c.getAttribute('data-host');
      var then = from.totals[host];
      if (then === undefined || to.totals[host] === undefined || to.totals[host] < then) return;
      c.textContent = ((to.totals[host] - then) * 1000 / (to.at - from.at)).toFixed(1) + '/s';
    });
  }
  var previous = null;
  try { previous = JSON.parse(sessionStorage.getItem(key) || 'null'); } catch (e) { previous = null; }
  var usable = previous && now - previous.at >= 1000;
  if (usable) fill(previous, { at: now, totals: totals });
  if (!previous || usable || now < previous.at) sessionStorage.setItem(key, JSON.stringify({ at: now, totals: totals }));
  // No reading a second old to rate against: take a second one, a second from now.
  if (!usable && cells.length > 0) setTimeout(function () {
    fetch(location.href).then(function (res) { return res.text(); }).then(function (html) {
      var doc = new DOMParser().parseFromString(html, 'text/html');
      var later = { at: Number(doc.body.getAttribute('data-now')), totals: readTotals(doc) };
      if (later.at - now < 500) return;
      // Not kept: the next load rates against this load's reading, a whole reload apart.
      fill({ at: now, totals: totals }, later);
    }).catch(function () {});
  }, 1000);
  var said = sessionStorage.getItem('proxy-clusters-action');
  var status = document.getElementById('action-status');
  if (said && status) status.textContent = said;
  sessionStorage.removeItem('proxy-clusters-action');
  Array.prototype.forEach.call(document.querySelectorAll('#actions form'), function (form) {
    form.addEventListener('submit', function (e) {
      e.preventDefault();
      var ask = form.getAttribute('data-confirm');
      if (ask && !window.confirm(ask)) return;
      var path = form.getAttribute('action');
      fetch(form.action, { method: 'POST', body: new URLSearchParams(new FormData(form)) })
        .then(function (res) { return res.text().then(function (t) { return res.status + ' ' + t.trim(); }); })
        .catch(function (err) { return String(err); })
        .then(function (answer) {
          sessionStorage.setItem('proxy-clusters-action', path + ': ' + answer);
          location.reload();
        });
    });
  });
})();
`;

import type { State } from '../../reducers/state.js';
import { formatUtc, shortDuration } from '../events/time.js';
import type { EndpointSummary } from '../help/render.js';
import { postForm } from '../home/render.js';
import { HTML, type ViewResult } from '../result.js';
import { reportedState } from '../server-info/render.js';
import { escapeHtml as esc } from '../stats/html-escape.js';
import type { ClustersFigures, HealthCheckResult } from './figures.js';
import { type HostView, selectClusters } from './select.js';

/**
 * The mutations an operator reaches for while looking at the hosts (HAProxy's stats page has
 * the like): shown as POST buttons when the table being served has them.
 */
export const CLUSTERS_PAGE_ACTIONS: readonly string[] = [
  '/healthcheck/fail',
  '/healthcheck/ok',
  '/drain_listeners',
  '/reset_counters',
];

/** Mutations that cannot be taken back ask first. */
const CONFIRM: ReadonlySet<string> = new Set(['/drain_listeners']);

export interface ClustersHtmlOptions {
  /**
   * The endpoints of the admin (the buttons are those of `CLUSTERS_PAGE_ACTIONS` among its
   * mutations); empty for none, as under `--admin-read-only` or on a past snapshot.
   */
  actions: readonly EndpointSummary[];
  /** When the host counters were read (ms since the epoch): the page rates their change. */
  now: number;
  /** Seconds between reloads; 0 for none. */
  refreshS: number;
  /** The sequence number of the snapshot shown when it is a past one (`?at=`). */
  at: number | null;
}

/** A host's state as a word and a class: the worst verdict wins. */
function stateOf(h: HostView): { label: string; cls: string } {
  const flags = h.healthFlags;
  if (flags.includes('/failed_active_hc')) return { label: 'failed health check', cls: 'failed' };
  if (flags.includes('/failed_eds_health'))
    return { label: `unhealthy (${h.host.edsHealth})`, cls: 'failed' };
  if (flags.includes('/failed_outlier_check')) return { label: 'ejected (outlier)', cls: 'ejected' };
  if (flags.includes('/degraded_eds_health')) return { label: 'degraded', cls: 'degraded' };
  return { label: 'healthy', cls: 'healthy' };
}

/** The outlier detector's success rate, else the share of successful requests, as a percentage. */
function successRate(h: HostView): string {
  if (h.successRate >= 0) return `${h.successRate.toFixed(1)}%`;
  const done = h.counters.rq_success + h.counters.rq_error;
  return done > 0 ? `${((100 * h.counters.rq_success) / done).toFixed(1)}%` : '—';
}

/** `12s ago`, with the exact UTC time on hover. */
function ago(now: number, at: number): string {
  return `<time datetime='${formatUtc(at)}' title='${formatUtc(at)}'>${shortDuration(Math.max(0, now - at))} ago</time>`;
}

const CHECK_WORDS: Record<HealthCheckResult, { word: string; cls: string }> = {
  success: { word: 'passed', cls: 'ok' },
  degraded: { word: 'passed, degraded', cls: 'warn' },
  active: { word: 'failed', cls: 'bad' },
  network: { word: 'no answer', cls: 'bad' },
};

/** The last active check and when the checks' verdict last changed. */
function checkCell(h: HostView, now: number): string {
  const last = h.lastCheck
    ? `<span class='${CHECK_WORDS[h.lastCheck.result].cls}'>${CHECK_WORDS[h.lastCheck.result].word}</span> ${ago(now, h.lastCheck.at)}`
    : '—';
  const since =
    h.host.activeHcChangedAt === undefined
      ? ''
      : `<br><span class='meta'>${h.host.failedActiveHc ? 'failing' : 'passing'} since ${ago(now, h.host.activeHcChangedAt)}</span>`;
  return `<td class='check'>${last}${since}</td>`;
}

/** Outlier ejection: now (since when and why), or the last one and how long it lasted. */
function ejectionCell(h: HostView, now: number): string {
  const e = h.host.lastEjection;
  if (!e) return `<td class='ejection'>—</td>`;
  const why = esc(e.reason.replaceAll('_', ' '));
  if (h.host.failedOutlierCheck && e.endedAt === undefined)
    return `<td class='ejection'><span class='bad'>ejected</span> ${ago(now, e.at)} <span class='meta'>(${why})</span></td>`;
  const lasted = e.endedAt === undefined ? '' : ` for ${shortDuration(e.endedAt - e.at)}`;
  return `<td class='ejection'>last ejected ${ago(now, e.at)}${lasted} <span class='meta'>(${why})</span></td>`;
}

/** The server's state and the buttons, above the clusters. */
function serverBar(state: State, actions: readonly EndpointSummary[]): string {
  const shown = reportedState(state);
  const drain = state.drain.active ? ` <span class='meta'>listeners draining</span>` : '';
  const buttons = actions
    .filter((e) => e.mutates && CLUSTERS_PAGE_ACTIONS.includes(e.path))
    .map((e) =>
      postForm(e, ` title='${esc(e.help)}'${CONFIRM.has(e.path) ? ` data-confirm='${esc(e.help)}?'` : ''}`),
    )
    .join('\n');
  return `<div id='server'>server <span id='server-state' class='state-${esc(shown)}'>${esc(shown)}</span>${drain}
${buttons ? `<div id='actions'>${buttons}<span id='action-status' class='meta'></span></div>` : ''}
</div>`;
}

/** A bar as wide as the success rate (inline SVG), red below 100%. */
function rateBar(h: HostView): string {
  const done = h.counters.rq_success + h.counters.rq_error;
  const share = h.successRate >= 0 ? h.successRate / 100 : done > 0 ? h.counters.rq_success / done : null;
  if (share === null) return '';
  const width = Math.round(share * 60);
  return `<svg class='bar' width='60' height='8' aria-hidden='true'><rect width='60' height='8' fill='#eee'/><rect width='${width}' height='8' fill='${share < 1 ? '#c62828' : '#2e7d32'}'/></svg> `;
}

const STYLE = `
body { font-family: sans-serif; margin: 1em; }
h1 { font-size: 1.4em; margin: 0 0 .3em; }
h2 { font-size: 1.1em; margin: 1.2em 0 .3em; }
.meta { color: #666; }
table.hosts { border-collapse: collapse; font-size: .9em; }
.hosts td { white-space: nowrap; }
.hosts th, .hosts td { border-bottom: 1px solid #ddd; padding: 3px 8px; text-align: left; }
.hosts td.num { text-align: right; font-family: monospace; }
.hosts td.address { font-family: monospace; }
tr.healthy td.state { color: #1b5e20; }
tr.failed { background: #ffebee; }
tr.failed td.state { color: #b71c1c; font-weight: bold; }
tr.ejected { background: #fff3e0; }
tr.ejected td.state { color: #e65100; font-weight: bold; }
tr.degraded { background: #fffde7; }
tr.degraded td.state { color: #8d6e00; }
#server { margin: .4em 0 .8em; }
#server-state { color: #fff; font-weight: bold; padding: 1px 8px; border-radius: 4px; background: #555; }
#server-state.state-LIVE { background: #2e7d32; } #server-state.state-DRAINING { background: #e65100; }
#actions { display: flex; flex-wrap: wrap; gap: .3em 1.2em; align-items: center; margin-top: .4em; }
#actions form { margin: 0; }
.ok { color: #1b5e20; } .warn { color: #8d6e00; } .bad { color: #b71c1c; font-weight: bold; }
td.check, td.ejection { font-size: .9em; }
.dot { display: inline-block; width: .7em; height: .7em; border-radius: 50%; margin-right: .3em; }
tr.healthy .dot { background: #43a047; } tr.failed .dot { background: #e53935; }
tr.ejected .dot { background: #fb8c00; } tr.degraded .dot { background: #fdd835; }
`;

export function renderClustersHtml(
  state: State,
  figures: ClustersFigures,
  options: ClustersHtmlOptions,
): ViewResult {
  const sections = selectClusters(state, figures).map((c) => {
    const name = c.entry.name;
    const counts = { healthy: 0, failed: 0, ejected: 0, degraded: 0 } as Record<string, number>;
    const rows = c.hosts.map((h) => {
      const s = stateOf(h);
      counts[s.cls] = (counts[s.cls] ?? 0) + 1;
      return (
        `<tr class='host ${s.cls}' data-address='${esc(h.host.address)}'>` +
        `<td class='address'>${esc(h.host.address)}${h.host.hostname ? ` <span class='meta'>${esc(h.host.hostname)}</span>` : ''}</td>` +
        `<td class='state'><span class='dot'></span>${esc(s.label)}</td>` +
        `<td class='flags'>${esc(h.healthFlags.join(' ') || '—')}</td>` +
        checkCell(h, options.now) +
        ejectionCell(h, options.now) +
        `<td class='num weight'>${h.host.weight}</td>` +
        `<td class='num priority'>${h.host.priority}</td>` +
        `<td class='num success'>${rateBar(h)}${successRate(h)}</td>` +
        `<td class='num rate' data-host='${esc(`${name}/${h.host.address}`)}' data-total='${h.counters.rq_total}'>—</td>` +
        `<td class='num rq_total'>${h.counters.rq_total}</td>` +
        `<td class='num rq_error'>${h.counters.rq_error}</td>` +
        `<td class='num rq_active'>${h.counters.rq_active}</td>` +
        `<td class='num cx_active'>${h.counters.cx_active}</td></tr>`
      );
    });
    const summary = Object.entries(counts)
      .filter(([, n]) => n > 0)
      .map(([k, n]) => `${n} ${k}`)
      .join(', ');
    const outlier = c.outlier
      ? ` · outlier success rate average ${c.outlier.successRateAverage}, ejection threshold ${c.outlier.successRateEjectionThreshold}`
      : '';
    return `<section class='cluster' id='cluster-${esc(name)}'>
<h2>${esc(name)} <span class='meta'>${c.hosts.length} ${c.hosts.length === 1 ? 'host' : 'hosts'}${summary ? `: ${summary}` : ''}${outlier}</span></h2>
<table class='hosts'><thead><tr><th>host</th><th>state</th><th>health flags</th><th>active check</th><th>outlier ejection</th><th>weight</th><th>priority</th><th>success rate</th><th>requests</th><th>rq_total</th><th>rq_error</th><th>rq_active</th><th>cx_active</th></tr></thead>
<tbody>
${rows.join('\n')}
</tbody></table>
</section>`;
  });
  const refresh = options.refreshS > 0 ? `<meta http-equiv='refresh' content='${options.refreshS}'>` : '';
  const when =
    options.at === null ? 'now' : `the snapshot after event ${options.at} (host counters and rates are live)`;
  const body = `<!DOCTYPE html>
<html lang='en'>
<head>
<meta charset='utf-8'>
${refresh}
<title>Clusters</title>
<style>${STYLE}</style>
</head>
<body data-now='${options.now}'>
<h1>Clusters</h1>
${serverBar(state, options.actions)}
<p class='meta'><a href='./'>admin home</a> · <a href='events?format=html'>event timeline</a> · version ${esc(state.clusterManager.versionInfo || 'static')} · as of ${esc(when)}${options.refreshS > 0 ? ` · reloads every ${options.refreshS} s` : ''} · request rate since this tab's previous reading</p>
${sections.join('\n') || '<p>no cluster</p>'}
<script>${SCRIPT}</script>
</body>
</html>
`;
  return { status: 200, contentType: HTML, body };
}
