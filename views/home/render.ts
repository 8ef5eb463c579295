import { type EndpointSummary, listed } from '../help/render.js';
import { HTML, type ViewResult } from '../result.js';

const ESCAPES: Record<string, string> = {
  '&': '&amp;',
  '<': '&lt;',
  '>': '&gt;',
  "'": '&#39;',
  '"': '&quot;',
};

function esc(value: string): string {
  return value.replace(/[&<>'"]/g, (c) => ESCAPES[c] ?? c);
}

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

function row(e: EndpointSummary): string {
  // Relative links: the page works behind a path prefix too.
  const target = esc(e.path.slice(1));
  const inputs = e.params.map(input).join(' ');
  let cell: string;
  if (e.mutates) {
    cell = `<form action='${target}' method='post'><button>${target}</button> ${inputs}</form>`;
  } else if (e.params.length > 0) {
    cell = `<form action='${target}' method='get'><a href='${target}'>${target}</a> ${inputs} <button>go</button></form>`;
  } else {
    cell = `<a href='${target}'>${target}</a>`;
  }
  return `<tr class='home-row'><td class='home-data'>${cell}</td><td class='home-data'>${esc(e.help)}</td></tr>`;
}

/**
 * The admin home page: one row per listed endpoint, a link for reads and a POST form
 * (with inputs for its parameters) for mutations, so a browser never mutates with GET.
 */
export function renderHome(endpoints: readonly EndpointSummary[]): ViewResult {
  const rows = listed(endpoints)
    .filter((e) => e.path !== '/')
    .map(row)
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
</style>
</head>
<body>
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
