/** `httpCall()`'s primitives: a request to a cluster through the proxy's pools, and its answer. */
import type { HttpRequest } from '../../../codec/request.js';
import { callCluster } from '../cluster-call.js';
import { type Define, headerName, REQUEST, RESPONSE, type ScriptState } from './flow.js';
import { LuaRaise } from './vm.js';

/** `httpCall()`: a request to a cluster through the proxy's pools; the answer as the reference gives it. */
export function httpCallPrimitives(p: Define, script: ScriptState): void {
  p('httpcall', (v, s) => {
    const dir = v.num(2) === REQUEST ? REQUEST : RESPONSE;
    const cluster = v.checkString(3, 'the cluster');
    const body = v.type(4) === 0 ? Buffer.alloc(0) : v.bytes(4);
    const timeout = v.type(5) === 3 ? v.num(5) : Number.NaN;
    if (!(timeout >= 0)) throw new LuaRaise('http call timeout must be >= 0');
    if (script.host.clusters.get(cluster) === undefined)
      throw new LuaRaise('http call cluster invalid. Must be configured');
    const asynchronous = v.bool(6);
    const sendXff = v.bool(7);
    const headers: string[] = [];
    const pseudo: Record<string, string> = {};
    for (let i = 8; i + 1 <= v.top(); i += 2) {
      const name = headerName(v, i);
      const value = v.checkString(i + 1, 'a header value');
      if (name.startsWith(':') || name === 'host') pseudo[name === 'host' ? ':authority' : name] = value;
      else headers.push(name, value);
    }
    const { ':method': method, ':path': path, ':authority': authority } = pseudo;
    if (method === undefined || path === undefined || authority === undefined)
      throw new LuaRaise("http call headers must include ':path', ':method', and ':authority'");
    // As the reference's client appends its own address (send_xff, on unless a script says not).
    if (sendXff) appendXff(headers, s.stream.req);
    const request = { cluster, method, path, authority, headers, body, timeoutMs: timeout, http2: false };
    if (asynchronous) {
      callCluster(script.host.clusters, request, () => {});
      return 0;
    }
    if (s.http?.call != null) throw new LuaRaise('an http call is already in flight');
    s.http = { dir, call: null, result: null };
    s.http.call = callCluster(script.host.clusters, request, (result) => s.httpDone(result));
    return 0;
  });
  // 0 while the call is in flight; else 1, the body (false when empty), then the headers.
  p('httpresult', (v, s) => {
    const http = s.http;
    if (http == null) throw new LuaRaise('no http call in flight');
    const result = http.result;
    if (result === null) {
      s.flows[http.dir].waiting = true;
      v.pushNumber(0);
      return 1;
    }
    s.http = null;
    // A call that got no answer is the reference's made-up 503.
    const status = result.ok ? result.status : 503;
    const body = result.ok ? result.body : Buffer.from('upstream failure');
    const headers = result.ok ? result.headers : [];
    v.ensureStack(4 + headers.length);
    v.pushNumber(1);
    if (body.length === 0) v.pushBool(false);
    else v.pushBytes(body);
    v.pushString(':status');
    v.pushString(String(status));
    for (const item of headers) v.pushString(item);
    return 4 + headers.length;
  });
}

/** Appends the proxy's address on the request's connection to a call's `x-forwarded-for`. */
function appendXff(headers: string[], req: HttpRequest): void {
  const local = req.localAddress ?? '';
  const ip = local.startsWith('[')
    ? local.slice(1, local.indexOf(']'))
    : local.slice(0, local.lastIndexOf(':'));
  if (ip === '') return;
  for (let i = 0; i < headers.length; i += 2)
    if (headers[i] === 'x-forwarded-for') {
      headers[i + 1] = `${headers[i + 1]},${ip}`;
      return;
    }
  headers.push('x-forwarded-for', ip);
}
