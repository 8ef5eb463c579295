import { escapeHtml } from './html-escape.js';
import { STAT_TYPES, type StatsParams } from './params.js';

/** How many stats the active page shows by default (the spec's limit). */
export const ACTIVE_TOP = 50;
/** Seconds between refreshes by default (the default flush interval). */
export const ACTIVE_INTERVAL_S = 5;

/**
 * The page's script: fetches `/stats?format=json&usedonly` every `interval` seconds, counts
 * how often each stat's value changed, and lists the `count` most changing ones. It
 * schedules the next fetch only after the previous one finished, so a slow server never
 * piles up requests; closing the tab stops the timer and with it the load.
 */
const SCRIPT = `
(function () {
  var changes = new Map();
  var last = new Map();
  var timer = null;
  var generation = 0;
  var $ = function (id) { return document.getElementById(id); };
  function reset() { changes.clear(); last.clear(); }
  function query() {
    var q = new URLSearchParams({ format: 'json', usedonly: '' });
    var f = $('filter').value;
    if (f) q.set('filter', f);
    q.set('type', $('type').value);
    return '/stats?' + q.toString();
  }
  function observe(name, value) {
    var before = last.get(name);
    if (before !== undefined && before !== value) changes.set(name, (changes.get(name) || 0) + 1);
    else if (!changes.has(name)) changes.set(name, 0);
    last.set(name, value);
  }
  function render() {
    var count = Math.max(1, parseInt($('count').value, 10) || ${ACTIVE_TOP});
    var rows = Array.from(changes.entries()).sort(function (a, b) {
      return b[1] - a[1] || (a[0] < b[0] ? -1 : a[0] > b[0] ? 1 : 0);
    }).slice(0, count);
    var body = $('active-stats');
    body.textContent = '';
    rows.forEach(function (r) {
      var tr = document.createElement('tr');
      [r[0], last.get(r[0]), r[1]].forEach(function (v) {
        var td = document.createElement('td');
        td.textContent = String(v);
        tr.appendChild(td);
      });
      body.appendChild(tr);
    });
  }
  function schedule(mine) {
    var seconds = parseFloat($('interval').value);
    if (!(seconds > 0)) seconds = ${ACTIVE_INTERVAL_S};
    timer = setTimeout(function () { refresh(mine); }, Math.max(100, seconds * 1000));
  }
  function refresh(mine) {
    if (mine !== generation) return;
    fetch(query()).then(function (r) {
      if (!r.ok) return r.text().then(function (t) { throw new Error(t); });
      return r.json();
    }).then(function (json) {
      if (mine !== generation) return;
      $('status').textContent = '';
      json.stats.forEach(function (s) {
        if (s.histograms) {
          (s.histograms.computed_quantiles || []).forEach(function (h) {
            observe(h.name, JSON.stringify(h.values.map(function (v) { return v.cumulative; })));
          });
        } else {
          observe(s.name, typeof s.value === 'string' ? JSON.stringify(s.value) : s.value);
        }
      });
      render();
    }).catch(function (err) {
      $('status').textContent = String(err.message || err);
    }).then(function () { if (mine === generation) schedule(mine); });
  }
  function restart() {
    generation += 1;
    if (timer) clearTimeout(timer);
    reset();
    refresh(generation);
  }
  ['filter', 'type'].forEach(function (id) { $(id).addEventListener('change', restart); });
  $('filter').addEventListener('keydown', function (e) { if (e.key === 'Enter') { e.preventDefault(); restart(); } });
  $('count').addEventListener('change', render);
  $('interval').addEventListener('change', function () { generation += 1; if (timer) clearTimeout(timer); schedule(generation); });
  restart();
})();
`;

/** `/stats?format=active-html`: the top stats by frequency of change, refreshed in place. */
export function renderActiveHtml(params: StatsParams): string {
  const types = STAT_TYPES.map(
    (t) => `<option value="${t}"${t === params.type ? ' selected' : ''}>${t}</option>`,
  ).join('');
  return `<!DOCTYPE html>
<html><head><meta charset="utf-8"><title>proxy active stats</title>
<style>body{font-family:sans-serif} label{margin-right:1em} td{font-family:monospace;padding:0 1em 0 0}</style>
</head><body>
<h1>Active stats</h1>
<div id="controls">
<label>Filter <input type="text" id="filter" value="${escapeHtml(params.filterSource)}" placeholder="RE2 regex" /></label>
<label>Type <select id="type">${types}</select></label>
<label>Count <input type="number" id="count" min="1" value="${ACTIVE_TOP}" /></label>
<label>Interval (s) <input type="number" id="interval" min="0.1" step="0.1" value="${ACTIVE_INTERVAL_S}" /></label>
<span id="status"></span>
</div>
<table><thead><tr><th>Name</th><th>Value</th><th>Changes</th></tr></thead><tbody id="active-stats"></tbody></table>
<script>${SCRIPT}</script>
</body></html>
`;
}
