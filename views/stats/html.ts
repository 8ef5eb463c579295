import { escapeHtml } from './html-escape.js';
import { BUCKET_MODES, STAT_TYPES, type StatsParams } from './params.js';
import type { Selection } from './select.js';
import { renderText } from './text.js';

const option = (value: string, selected: boolean): string =>
  `<option value="${value}"${selected ? ' selected' : ''}>${value}</option>`;

/** The query form shared by both HTML pages: filter, used-only, type, buckets, format. */
export function statsForm(params: StatsParams, format: string): string {
  return `<form id="stats-form" action="/stats" method="get">
<label>Filter <input type="text" id="filter" name="filter" value="${escapeHtml(params.filterSource)}" placeholder="RE2 regex" /></label>
<label><input type="checkbox" id="usedonly" name="usedonly"${params.usedOnly ? ' checked' : ''} onchange="this.form.submit()" /> Used only</label>
<label>Type <select id="type" name="type" onchange="this.form.submit()">${STAT_TYPES.map((t) => option(t, t === params.type)).join('')}</select></label>
<label>Histograms <select id="histogram_buckets" name="histogram_buckets" onchange="this.form.submit()">${BUCKET_MODES.map((m) => option(m, m === params.histogramBuckets)).join('')}</select></label>
<label>Format <select id="format" name="format" onchange="this.form.submit()">${['html', 'active-html', 'text', 'json', 'prometheus'].map((f) => option(f, f === format)).join('')}</select></label>
<button type="submit">Apply</button>
</form>`;
}

/** `/stats?format=html`: the form, then the selected stats as the text format lists them. */
export function renderHtml(sel: Selection, params: StatsParams): string {
  const text = renderText(sel, params);
  return `<!DOCTYPE html>
<html><head><meta charset="utf-8"><title>proxy stats</title>
<style>body{font-family:sans-serif} form label{margin-right:1em} pre{font-family:monospace}</style>
</head><body>
<h1>Stats</h1>
${statsForm(params, 'html')}
<pre id="stats">${escapeHtml(text)}</pre>
</body></html>
`;
}
