/**
 * `/clusters?format=html`: per cluster a table of its hosts with health, weight, success
 * rate and request rate, each row coloured by the host's state, so a flapping or ejected
 * host stands out at a glance. The page reloads itself every few seconds.
 */

/**
 * Request rates: host counters are totals, and a rate needs two readings. The page keeps
 * its previous reading in the tab's session storage and rates the change since it (when
 * at least a second old), so the server keeps nothing per viewer. A total that went down
 * (`/reset_counters`) is not rated.
 */
const SCRIPT = `
(function () {
  var key = 'proxy-clusters-reading';
  var now = Number(document.body.getAttribute('data-now'));
  var cells = Array.prototype.slice.call(document.querySelectorAll('td.rate'));
  var totals = {};
  cells.forEach(function (c) { totals[c.getAttribute('data-host')] = Number(c.getAttribute('data-total')); });
  var previous = null;
  try { previous = JSON.parse(sessionStorage.getItem(key) || 'null'); } catch (e) { previous = null; }
  var usable = previous && now - previous.at >= 1000;
  if (usable) {
    cells.forEach(function (c) {
      var host = c.getAttribute('data-host');
      var then = previous.totals[host];
      if (then === undefined || totals[host] < then) return;
      c.textContent = ((totals[host] - then) * 1000 / (now - previous.at)).toFixed(1) + '/s';
    });
  }
  if (!previous || usable || now < previous.at) sessionStorage.setItem(key, JSON.stringify({ at: now, totals: totals }));
})();
`;

import type { State } from '../../reducers/state.js';
import { HTML, type ViewResult } from '../result.js';
import { escapeHtml as esc } from '../stats/html-escape.js';
import type { ClustersFigures } from './figures.js';
import { type HostView, selectClusters } from './select.js';

export interface ClustersHtmlOptions {
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
table.hosts { border-collapse: collapse; }
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
<table class='hosts'><thead><tr><th>host</th><th>state</th><th>health flags</th><th>weight</th><th>priority</th><th>success rate</th><th>requests</th><th>rq_total</th><th>rq_error</th><th>rq_active</th><th>cx_active</th></tr></thead>
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
<p class='meta'><a href='./'>admin home</a> · <a href='events?format=html'>event timeline</a> · version ${esc(state.clusterManager.versionInfo || 'static')} · as of ${esc(when)}${options.refreshS > 0 ? ` · reloads every ${options.refreshS} s` : ''} · request rate since this tab's previous reading</p>
${sections.join('\n') || '<p>no cluster</p>'}
<script>${SCRIPT}</script>
</body>
</html>
`;
  return { status: 200, contentType: HTML, body };
}
