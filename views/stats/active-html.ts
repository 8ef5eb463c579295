import { escapeHtml } from './html-escape.js';
import { STAT_TYPES, type StatsParams } from './params.js';

/** How many stats the active page shows by default (the spec's limit). */
export const ACTIVE_TOP = 50;
/** Seconds between refreshes by default (the default flush interval). */
export const ACTIVE_INTERVAL_S = 5;

/** Samples of each stat the sparklines keep (at the default interval, five minutes). */
export const ACTIVE_SAMPLES = 60;

/**
 * The page's script: fetches `/stats?format=json&usedonly` every `interval` seconds (one
 * request per stat type shown, so counters, gauges and histograms are told apart, and
 * histogram buckets in the disjoint mode), counts how often each stat's value changed, and
 * lists the `count` most changing ones with a picture: a sparkline of the change per
 * interval for a counter, of the value for a gauge, and for a histogram bars of its
 * quantiles and of its buckets. It schedules the next fetch only after the previous one
 * finished, so a slow server never piles up requests; closing the tab stops the timer and
 * with it the load.
 */
const SCRIPT = `
(function () {
  var SVG = 'http://www.w3.org/2000/svg';
  var SAMPLES = ${ACTIVE_SAMPLES};
  var QUANTILE_LABELS = ['P0', 'P25', 'P50', 'P75', 'P90', 'P95', 'P99', 'P99.9', 'P100'];
  var changes = new Map();
  var last = new Map();
  var kinds = new Map();
  var series = new Map();
  var histograms = new Map();
  var timer = null;
  var generation = 0;
  // When the answers being taken were fetched, and the hovered sparkline (kept over re-renders).
  var fetchedAt = 0;
  var hover = null;
  var $ = function (id) { return document.getElementById(id); };
  function reset() { changes.clear(); last.clear(); kinds.clear(); series.clear(); histograms.clear(); }
  function query(type, buckets) {
    var q = new URLSearchParams({ format: 'json', usedonly: '' });
    var f = $('filter').value;
    if (f) q.set('filter', f);
    q.set('type', type);
    if (buckets) q.set('histogram_buckets', 'disjoint');
    return '/stats?' + q.toString();
  }
  function requests() {
    var t = $('type').value;
    var all = t === 'All';
    var out = [];
    if (all || t === 'Counters') out.push({ kind: 'counter', url: query('Counters') });
    if (all || t === 'Gauges') out.push({ kind: 'gauge', url: query('Gauges') });
    if (all || t === 'TextReadouts') out.push({ kind: 'text', url: query('TextReadouts') });
    if (all || t === 'Histograms') {
      out.push({ kind: 'histogram', url: query('Histograms') });
      out.push({ kind: 'buckets', url: query('Histograms', true) });
    }
    return out;
  }
  function observe(name, kind, value, key) {
    var before = last.get(name);
    if (before !== undefined && before !== key) changes.set(name, (changes.get(name) || 0) + 1);
    else if (!changes.has(name)) changes.set(name, 0);
    kinds.set(name, kind);
    if (kind === 'counter' || kind === 'gauge') {
      var points = series.get(name) || [];
      // A counter is drawn as its change per interval: a flat line is a stat at rest.
      var y = kind === 'counter' ? (before === undefined ? null : Math.max(0, value - before)) : value;
      if (y !== null) points.push({ t: fetchedAt, v: y });
      if (points.length > SAMPLES) points.shift();
      series.set(name, points);
    }
    last.set(name, key);
  }
  function node(tag, attrs, parent) {
    var el = document.createElementNS(SVG, tag);
    Object.keys(attrs).forEach(function (k) { el.setAttribute(k, String(attrs[k])); });
    if (parent) parent.appendChild(el);
    return el;
  }
  function titled(el, text) { node('title', {}, el).textContent = text; return el; }
  /** '-2m30s', '-45s': how long before the latest reading. */
  function ago(ms) {
    var s = Math.round(ms / 1000);
    if (s <= 0) return 'now';
    return '-' + (s >= 60 ? Math.floor(s / 60) + 'm' + (s % 60 ? (s % 60) + 's' : '') : s + 's');
  }
  function clock(t) { return new Date(t).toTimeString().slice(0, 8); }
  /** Every sparkline shares one time axis: the oldest sample kept of any stat to the latest reading. */
  function timeWindow() {
    var start = fetchedAt;
    series.forEach(function (points) { if (points.length > 0 && points[0].t < start) start = points[0].t; });
    return { start: start, end: fetchedAt, span: Math.max(1, fetchedAt - start) };
  }
  var W = 320, PLOT = 34, AXIS = 12;
  function sparkline(name, points, kind, win) {
    var svg = node('svg', { width: W, height: PLOT + AXIS, viewBox: '0 0 ' + W + ' ' + (PLOT + AXIS), class: 'sparkline ' + kind, 'data-name': name });
    var values = points.map(function (p) { return p.v; });
    var min = Math.min.apply(null, values.concat([kind === 'counter' ? 0 : Infinity]));
    var max = Math.max.apply(null, values);
    var span = max - min || 1;
    var x = function (t) { return 1 + ((t - win.start) / win.span) * (W - 2); };
    var y = function (v) { return PLOT - 2 - ((v - min) / span) * (PLOT - 4); };
    var coords = points.map(function (p) { return x(p.t).toFixed(1) + ',' + y(p.v).toFixed(1); });
    if (points.length === 1) coords.push((W - 1) + ',' + y(points[0].v).toFixed(1));
    node('rect', { x: 0, y: 0, width: W, height: PLOT, fill: '#fafafa' }, svg);
    [0, 0.5, 1].forEach(function (f) {
      var tx = 1 + f * (W - 2);
      node('line', { x1: tx, x2: tx, y1: PLOT, y2: PLOT + 3, stroke: '#999' }, svg);
      var label = node('text', { x: tx, y: PLOT + AXIS - 1, 'font-size': 9, fill: '#666', 'text-anchor': f === 0 ? 'start' : f === 1 ? 'end' : 'middle', class: 'tick' }, svg);
      label.textContent = ago(win.span * (1 - f));
    });
    node('line', { x1: 0, x2: W, y1: PLOT, y2: PLOT, stroke: '#ccc' }, svg);
    node('polyline', { points: coords.join(' '), fill: 'none', stroke: kind === 'counter' ? '#1565c0' : '#2e7d32', 'stroke-width': 1.5 }, svg);
    node('line', { class: 'cursor', x1: 0, x2: 0, y1: 0, y2: PLOT, stroke: '#888', visibility: 'hidden' }, svg);
    node('circle', { class: 'marker', r: 3, cx: 0, cy: 0, fill: '#d84315', visibility: 'hidden' }, svg);
    titled(svg, (kind === 'counter' ? 'change per interval' : 'value') + ': min ' + min + ', max ' + max + ', last ' + values[values.length - 1] + ' (' + points.length + ' samples)');
    svg.addEventListener('mousemove', function (e) {
      var box = svg.getBoundingClientRect();
      hover = { name: name, x: (e.clientX - box.left) * (W / box.width) };
      point(svg, points, kind, win, x, y, hover.x);
    });
    svg.addEventListener('mouseleave', function () {
      hover = null;
      point(svg, points, kind, win, x, y, null);
    });
    return svg;
  }
  /** Marks the sample nearest to the x of 'at' and reads it out beside the picture. */
  function point(svg, points, kind, win, x, y, at) {
    var readout = svg.parentNode && svg.parentNode.querySelector('.readout');
    var cursor = svg.querySelector('.cursor');
    var marker = svg.querySelector('.marker');
    if (at === null) {
      cursor.setAttribute('visibility', 'hidden');
      marker.setAttribute('visibility', 'hidden');
      if (readout) readout.textContent = '';
      return;
    }
    var best = points[0];
    points.forEach(function (p) { if (Math.abs(x(p.t) - at) < Math.abs(x(best.t) - at)) best = p; });
    var px = x(best.t).toFixed(1);
    cursor.setAttribute('x1', px); cursor.setAttribute('x2', px); cursor.setAttribute('visibility', 'visible');
    marker.setAttribute('cx', px); marker.setAttribute('cy', y(best.v).toFixed(1)); marker.setAttribute('visibility', 'visible');
    if (readout) readout.textContent = (kind === 'counter' ? '+' + best.v + ' in the interval' : best.v) + ' at ' + clock(best.t) + ' (' + ago(win.end - best.t) + ')';
  }
  function bars(values, labels, cls, caption) {
    var w = 8, gap = 2, h = 32;
    var svg = node('svg', { width: values.length * (w + gap), height: h + 2, class: 'bars ' + cls });
    var max = Math.max.apply(null, values.map(function (v) { return v || 0; })) || 1;
    values.forEach(function (v, i) {
      var height = v ? Math.max(1, (v / max) * h) : 0;
      titled(node('rect', { x: i * (w + gap), y: h + 1 - height, width: w, height: height }, svg), labels[i] + ': ' + (v === null ? 'none' : v));
    });
    titled(svg, caption);
    return svg;
  }
  function histogramPicture(name) {
    var h = histograms.get(name) || {};
    var cell = document.createElement('span');
    if (h.quantiles) cell.appendChild(bars(h.quantiles, QUANTILE_LABELS, 'quantiles', 'cumulative quantiles P0 to P100'));
    if (h.buckets) {
      var used = h.buckets.filter(function (b) { return b.cumulative > 0; });
      var lo = h.buckets.indexOf(used[0]);
      var hi = h.buckets.indexOf(used[used.length - 1]);
      var shown = lo < 0 ? [] : h.buckets.slice(lo, hi + 1);
      if (shown.length > 0) {
        cell.appendChild(document.createTextNode(' '));
        cell.appendChild(bars(shown.map(function (b) { return b.cumulative; }), shown.map(function (b) { return 'up to ' + b.upper_bound; }), 'buckets', 'recorded values per bucket, ' + shown[0].upper_bound + ' to ' + shown[shown.length - 1].upper_bound));
      }
    }
    return cell;
  }
  function shownValue(name) {
    var kind = kinds.get(name);
    if (kind !== 'histogram') return String(last.get(name));
    var q = (histograms.get(name) || {}).quantiles || [];
    var short = function (v) { return v === null || v === undefined ? 'none' : String(Number(v.toPrecision(3))); };
    return 'P50 ' + short(q[2]) + ', P99 ' + short(q[6]) + ', P100 ' + short(q[8]);
  }
  function render() {
    var count = Math.max(1, parseInt($('count').value, 10) || ${ACTIVE_TOP});
    var rows = Array.from(changes.entries()).sort(function (a, b) {
      return b[1] - a[1] || (a[0] < b[0] ? -1 : a[0] > b[0] ? 1 : 0);
    }).slice(0, count);
    var body = $('active-stats');
    var win = timeWindow();
    body.textContent = '';
    rows.forEach(function (r) {
      var name = r[0];
      var kind = kinds.get(name);
      var tr = document.createElement('tr');
      tr.className = 'stat ' + kind;
      [name, shownValue(name), r[1]].forEach(function (v) {
        var td = document.createElement('td');
        td.textContent = String(v);
        tr.appendChild(td);
      });
      var picture = document.createElement('td');
      picture.className = 'picture';
      if (kind === 'histogram') picture.appendChild(histogramPicture(name));
      else if (series.has(name) && series.get(name).length > 0) {
        picture.appendChild(sparkline(name, series.get(name), kind, win));
        var readout = document.createElement('span');
        readout.className = 'readout';
        picture.appendChild(readout);
      }
      tr.appendChild(picture);
      body.appendChild(tr);
    });
    // A refresh redraws the rows: the hovered picture reads out again under the pointer.
    if (hover) {
      var still = body.querySelector('svg.sparkline[data-name="' + CSS.escape(hover.name) + '"]');
      if (still) still.dispatchEvent(new MouseEvent('mousemove', { clientX: still.getBoundingClientRect().left + hover.x * still.getBoundingClientRect().width / W }));
      else hover = null;
    }
  }
  function schedule(mine) {
    var seconds = parseFloat($('interval').value);
    if (!(seconds > 0)) seconds = ${ACTIVE_INTERVAL_S};
    timer = setTimeout(function () { refresh(mine); }, Math.max(100, seconds * 1000));
  }
  function take(kind, json) {
    json.stats.forEach(function (s) {
      if (s.histograms) {
        if (kind === 'buckets') {
          (s.histograms || []).forEach(function (h) {
            var entry = histograms.get(h.name) || {};
            entry.buckets = h.buckets;
            histograms.set(h.name, entry);
          });
          return;
        }
        (s.histograms.computed_quantiles || []).forEach(function (h) {
          var cumulative = h.values.map(function (v) { return v.cumulative; });
          var entry = histograms.get(h.name) || {};
          entry.quantiles = cumulative;
          histograms.set(h.name, entry);
          observe(h.name, 'histogram', null, JSON.stringify(cumulative));
        });
      } else if (kind !== 'buckets') {
        observe(s.name, kind, s.value, typeof s.value === 'string' ? JSON.stringify(s.value) : s.value);
      }
    });
  }
  function refresh(mine) {
    if (mine !== generation) return;
    var asked = requests();
    Promise.all(asked.map(function (r) {
      return fetch(r.url).then(function (res) {
        if (!res.ok) return res.text().then(function (t) { throw new Error(t); });
        return res.json();
      });
    })).then(function (answers) {
      if (mine !== generation) return;
      $('status').textContent = '';
      fetchedAt = Date.now();
      answers.forEach(function (json, i) { take(asked[i].kind, json); });
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
<style>body{font-family:sans-serif} label{margin-right:1em} td{font-family:monospace;padding:1px 1em 1px 0;vertical-align:middle}
th{text-align:left} svg.bars rect{fill:#ef6c00} svg.bars.buckets rect{fill:#6a1b9a} tr.stat:nth-child(even){background:#f6f6f6}
.legend{font-size:.85em;color:#555} td.picture{white-space:nowrap} .readout{font-size:.85em;color:#d84315;margin-left:.5em}</style>
</head><body>
<h1>Active stats</h1>
<div id="controls">
<label>Filter <input type="text" id="filter" value="${escapeHtml(params.filterSource)}" placeholder="RE2 regex" /></label>
<label>Type <select id="type">${types}</select></label>
<label>Count <input type="number" id="count" min="1" value="${ACTIVE_TOP}" /></label>
<label>Interval (s) <input type="number" id="interval" min="0.1" step="0.1" value="${ACTIVE_INTERVAL_S}" /></label>
<span id="status"></span>
</div>
<p class="legend">Sparklines: a counter's change per interval (blue), a gauge's value (green), over the last ${ACTIVE_SAMPLES} refreshes, on one time axis for all rows (now at the right); point at one for the value and time of the nearest sample. Histograms: cumulative quantiles P0 to P100 (orange) and recorded values per bucket (purple); hover for figures.</p>
<table><thead><tr><th>Name</th><th>Value</th><th>Changes</th><th>Picture</th></tr></thead><tbody id="active-stats"></tbody></table>
<script>${SCRIPT}</script>
</body></html>
`;
}
