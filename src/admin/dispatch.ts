import type { State } from '../../reducers/index.js';
import { helpText } from '../../views/help/render.js';
import { json, text } from '../../views/result.js';
import type { ServerContext } from '../context-core.js';
import { dryRun } from '../control/dry-run.js';
import type { AdminRequest, AdminResponse, HandlerDescriptor, ParamDescriptor } from './registry.js';

/** A request as it came off the socket, before any admin rule was applied. */
export interface RawAdminRequest {
  method: string;
  /** Path and query, as in the request line. */
  url: string;
  body: string;
  contentType: string;
}

/** What the adapter must do: write an answer, or hand the response to a streaming handler. */
export type Routed =
  | { kind: 'answer'; response: AdminResponse }
  | { kind: 'stream'; handler: HandlerDescriptor; req: AdminRequest };

/**
 * Path and query of a request target. Not `new URL`: that reads `//x` as a host name, and
 * the admin must match the path exactly as sent.
 */
function splitUrl(target: string): { pathname: string; searchParams: URLSearchParams } {
  const q = target.indexOf('?');
  if (q < 0) return { pathname: target, searchParams: new URLSearchParams() };
  return { pathname: target.slice(0, q), searchParams: new URLSearchParams(target.slice(q + 1)) };
}

/** Query parameters the adapter itself understands, on top of each handler's own. */
const AT = 'at';
const DRY_RUN = 'dry_run';

function answer(response: AdminResponse): Routed {
  return { kind: 'answer', response };
}

/** `usage: /path?a=<x|y>&flag`, from the descriptor. */
export function usageLine(h: HandlerDescriptor): string {
  if (h.params.length === 0) return `usage: ${h.path}\n`;
  const parts = h.params.map((p) => {
    if (p.kind === 'flag') return p.name;
    return `${p.name}=<${p.kind === 'enum' ? (p.values ?? []).join('|') : p.kind}>`;
  });
  return `usage: ${h.path}?${parts.join('&')}\n`;
}

function badParam(p: ParamDescriptor, value: string): string | null {
  if (p.kind === 'enum' && !(p.values ?? []).includes(value))
    return `must be one of ${(p.values ?? []).join(', ')}`;
  if (p.kind === 'number' && !/^-?\d+(\.\d+)?$/.test(value)) return 'must be a number';
  return null;
}

/**
 * Checks declared parameters; an empty value of a non-flag parameter counts as absent
 * (an HTML form submits untouched fields as `name=`). Returns the cleaned query or a 400.
 */
function checkParams(h: HandlerDescriptor, query: URLSearchParams): URLSearchParams | AdminResponse {
  const clean = new URLSearchParams(query);
  for (const p of h.params) {
    const values = clean.getAll(p.name);
    if (p.kind !== 'flag' && values.length > 0 && values.every((v) => v === '')) clean.delete(p.name);
    const value = clean.get(p.name);
    if (value === null) {
      if (p.required)
        return text(h.usage ?? `missing parameter '${p.name}' for ${h.path}\n${usageLine(h)}`, 400);
      continue;
    }
    const problem = p.kind === 'flag' ? null : badParam(p, value);
    if (problem)
      return text(
        h.usage ??
          `invalid value '${value}' for parameter '${p.name}' of ${h.path}: ${problem}\n${usageLine(h)}`,
        400,
      );
  }
  return clean;
}

/** The parameters of a request: the query, or for a POST without one, a form-encoded body. */
function paramsOf(raw: RawAdminRequest, url: { searchParams: URLSearchParams }): URLSearchParams {
  const fromQuery = url.searchParams;
  const ownKeys = [...fromQuery.keys()].filter((k) => k !== AT && k !== DRY_RUN);
  if (
    ownKeys.length > 0 ||
    raw.method !== 'POST' ||
    !raw.contentType.includes('application/x-www-form-urlencoded')
  )
    return fromQuery;
  const merged = new URLSearchParams(raw.body);
  for (const [k, v] of fromQuery) merged.append(k, v);
  return merged;
}

/** The snapshot to render: the current one, or with `?at=SEQ` the one history keeps. */
function stateFor(
  h: HandlerDescriptor,
  query: URLSearchParams,
  ctx: ServerContext,
): { state: State } | { error: AdminResponse } {
  const at = query.get(AT);
  if (at === null) return { state: ctx.store.state };
  const fail = (body: string, status = 400) => ({ error: text(body, status) });
  if (!h.snapshotView) return fail(`${h.path} does not support ?at=: it does not render a snapshot\n`);
  if (!/^\d+$/.test(at))
    return fail(`invalid value '${at}' for parameter 'at' of ${h.path}: must be a sequence number\n`);
  if (!ctx.history) return fail('?at= needs the event history: start the proxy with --event-log PATH\n');
  const seq = Number(at);
  const state = ctx.history.stateAt(seq);
  if (state) return { state };
  const oldest = ctx.history.oldestSeq();
  // Gone, not missing: the point existed but is older than what the history retains.
  if (seq < oldest)
    return fail(`seq ${at} is older than the history retains; the oldest kept is ${oldest}\n`, 410);
  return fail(`seq ${at} has not happened yet; the latest is ${ctx.store.state.seq}\n`, 404);
}

/** `dry_run`: what the request's events would change, folded into a copy; nothing is dispatched. */
function dryRunAnswer(h: HandlerDescriptor, req: AdminRequest, ctx: ServerContext): AdminResponse {
  const events = h.events!(req, ctx);
  if (!Array.isArray(events)) return events;
  return json(dryRun(req.state, events, ctx.store.scheduler.now()));
}

/**
 * Applies every admin rule that holds for all endpoints (exact path match, POST-only
 * mutations, declared parameters, `?at=` and `dry_run`) and runs the handler.
 */
export async function routeAdmin(
  table: readonly HandlerDescriptor[],
  raw: RawAdminRequest,
  ctx: ServerContext,
): Promise<Routed> {
  const url = splitUrl(raw.url);
  const h = table.find((d) => d.path === url.pathname);
  if (!h) return answer(text(`invalid path. ${helpText(table)}`, 404));
  // A dry run changes nothing, so a read-only admin still answers it.
  if (h.mutates && ctx.options.adminReadOnly && !(url.searchParams.has(DRY_RUN) && h.events))
    return answer(
      text(`${h.path} changes the server, and this admin is read-only (--admin-read-only): refused\n`, 403),
    );
  if (h.mutates && raw.method !== 'POST') {
    return answer(text(`Method ${raw.method} not allowed, POST required.\n`, 400));
  }
  const checked = checkParams(h, paramsOf(raw, url));
  if (!(checked instanceof URLSearchParams)) return answer(checked);
  const snapshot = stateFor(h, checked, ctx);
  if ('error' in snapshot) return answer(snapshot.error);
  const state = snapshot.state;
  const dry = checked.has(DRY_RUN);
  if (dry && !h.events) return answer(text(`${h.path} does not support dry_run\n`, 400));
  checked.delete(AT);
  checked.delete(DRY_RUN);
  const req: AdminRequest = {
    method: raw.method,
    path: h.path,
    query: checked,
    body: raw.body,
    state,
    table,
  };
  if (h.stream) return { kind: 'stream', handler: h, req };
  if (dry) return answer(dryRunAnswer(h, req, ctx));
  const response = await h.handle(req, ctx);
  // A mutation is acknowledged only once the event log holds its events: SIGKILL after the
  // answer loses nothing the client was told happened. When the log cannot take them (a full
  // disk) the change is applied but not durable, and the answer says so instead of a 200.
  if (h.mutates) {
    try {
      await ctx.eventLog.flush();
    } catch (err) {
      return answer(
        text(
          `${h.path}: applied, but not recorded: ${(err as Error).message}; ` +
            'it is written when the file takes writes again, and lost if the process ends first\n',
          500,
        ),
      );
    }
  }
  return answer(response);
}
