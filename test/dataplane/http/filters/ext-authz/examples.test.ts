/**
 * The reference's ext_authz example (examples/ext_authz: gRPC v2, gRPC v3, HTTP service, OPA),
 * its bootstraps from fixtures/real-world changed only in addresses (its hosts become the
 * test's servers on loopback, its listener port 0), served by the real `proxy` command with
 * two workers. As its README says: with `Authorization: Bearer token1` the upstream answers
 * `Hello user1 from behind Envoy!`, without a token 403; the OPA policy allows GET (as user
 * `OPA`) and denies the rest.
 */
import assert from 'node:assert/strict';
import { readFileSync } from 'node:fs';
import { join } from 'node:path';
import { after, before, describe, it } from 'node:test';
import { parse } from 'yaml';
import {
  bearerUser,
  helloUpstream,
  httpServer,
  type Message,
  unaryServer,
} from '../../../../helpers/authz-servers.js';
import { type Dump, root } from '../../../../helpers/bootstrap.js';
import { send } from '../../../../helpers/http-send.js';
import { startProxyProcess } from '../../../../helpers/proxy-process.js';

const PATHS = ['/envoy.service.auth.v2.Authorization/Check', '/envoy.service.auth.v3.Authorization/Check'];

/** The example's Go authorizer: a known Bearer token is allowed as its user. */
function tokens(request: Message): Message {
  const user = bearerUser(request.attributes.request.http.headers.authorization);
  return user === undefined
    ? { status: { code: 7 } }
    : {
        status: { code: 0 },
        ok_response: {
          headers: [{ header: { key: 'x-current-user', value: user }, append: { value: false } }],
        },
      };
}

/** The example's OPA policy (config/opa-service/policy.rego): GET is allowed as `OPA`. */
function opa(request: Message): Message {
  return request.attributes.request.http.method === 'GET'
    ? { status: { code: 0 }, ok_response: { headers: [{ header: { key: 'x-current-user', value: 'OPA' } }] } }
    : { status: { code: 7 } };
}

let upstream: Awaited<ReturnType<typeof helloUpstream>>;
let grpcAuthz: Awaited<ReturnType<typeof unaryServer>>;
let opaAuthz: Awaited<ReturnType<typeof unaryServer>>;
let httpAuthz: Awaited<ReturnType<typeof httpServer>>;

before(async () => {
  upstream = await helloUpstream();
  const types = ['envoy.service.auth.v2.CheckRequest', 'envoy.service.auth.v2.CheckResponse'] as const;
  grpcAuthz = await unaryServer(PATHS, ...types, tokens);
  opaAuthz = await unaryServer(PATHS, ...types, opa);
  // The example's Node authorizer (auth/http-service/server.js).
  httpAuthz = await httpServer((req, res) => {
    req.resume();
    const user = bearerUser(req.headers.authorization);
    if (user !== undefined) res.writeHead(200, { 'x-current-user': user }).end();
    else res.writeHead(403).end();
  });
});

after(() => {
  upstream.close();
  grpcAuthz.close();
  opaAuthz.close();
  httpAuthz.close();
});

/** The fixture with its hosts on loopback at the test's ports, its listener named and on port 0. */
function adapted(file: string): Dump {
  const bootstrap = parse(readFileSync(join(root, 'fixtures/real-world', file), 'utf8')) as Dump;
  const ports: Record<string, number> = {
    'upstream-service': upstream.port,
    'ext_authz-grpc-service': grpcAuthz.port,
    'ext_authz-opa-service': opaAuthz.port,
    'ext_authz-http-service': httpAuthz.port,
  };
  for (const cluster of bootstrap.static_resources.clusters) {
    for (const group of cluster.load_assignment.endpoints)
      for (const e of group.lb_endpoints) {
        const address = e.endpoint.address.socket_address;
        address.port_value = ports[address.address];
        address.address = '127.0.0.1';
      }
  }
  const listener = bootstrap.static_resources.listeners[0];
  listener.name = 'ingress';
  listener.address.socket_address = { address: '127.0.0.1', port_value: 0 };
  bootstrap.admin = { address: { socket_address: { address: '127.0.0.1', port_value: 0 } } };
  return bootstrap;
}

/** Serves an adapted fixture with two workers and runs `check` against its listener. */
async function serving(
  file: string,
  check: (port: number, stat: (name: string) => Promise<number>) => Promise<void>,
) {
  const proxy = await startProxyProcess(adapted(file), ['--concurrency', '2'], 60_000);
  try {
    const port = await proxy.listenerPort('ingress');
    const stat = async (name: string) => {
      const body = (await proxy.get(`/stats?filter=^${name.replaceAll('.', '\\.')}$`)).body;
      return Number(/: (\d+)/.exec(body)?.[1] ?? 0);
    };
    await check(port, stat);
  } finally {
    await proxy.stop();
  }
}

/**
 * An allowed request. The example's 250 ms timeouts (connect and check) can pass on a loaded
 * machine, mostly while a worker dials the authorizer first: such a check is an `error`,
 * answered 403 like a denial, so a 403 is retried a few times.
 */
async function allowed(port: number, token: string): Promise<string> {
  let res = await send(port, 'GET', '/service', { authorization: `Bearer ${token}` });
  for (let i = 0; i < 5 && res.status === 403; i++)
    res = await send(port, 'GET', '/service', { authorization: `Bearer ${token}` });
  assert.equal(res.status, 200);
  return res.body;
}

/** The README's session: token1 and token2 greet their users, no token and a bad one are refused. */
async function tokenSession(port: number, stat: (name: string) => Promise<number>): Promise<void> {
  for (let i = 0; i < 4; i++) assert.equal(await allowed(port, 'token1'), 'Hello user1 from behind Envoy!');
  assert.equal(await allowed(port, 'token2'), 'Hello user2 from behind Envoy!');
  const errors = await settled(stat, 'cluster.upstream-service.ext_authz.error');
  assert.equal((await send(port, 'GET', '/service')).status, 403);
  assert.equal((await send(port, 'GET', '/service', { authorization: 'Bearer nope' })).status, 403);
  assert.equal(await settled(stat, 'cluster.upstream-service.ext_authz.ok'), 5);
  // A refusal whose check failed under load counts as an error, not a denial.
  const failed = (await settled(stat, 'cluster.upstream-service.ext_authz.error')) - errors;
  assert.equal(await settled(stat, 'cluster.upstream-service.ext_authz.denied'), 2 - failed);
}

/** A counter once both workers have reported it (the admin merges them): the same value twice, 300 ms apart. */
async function settled(stat: (name: string) => Promise<number>, name: string): Promise<number> {
  let last = await stat(name);
  for (;;) {
    await new Promise((r) => setTimeout(r, 300));
    const now = await stat(name);
    if (now === last) return now;
    last = now;
  }
}

describe('the reference ext_authz example, served with --concurrency 2', () => {
  it('gRPC service, transport V2', async () => {
    const before = grpcAuthz.seen.length;
    await serving('ext-authz-grpc-service-v2.yaml', tokenSession);
    assert.ok(grpcAuthz.seen.slice(before).every((s) => s.path === PATHS[0]));
  });

  it('gRPC service, transport V3', async () => {
    const before = grpcAuthz.seen.length;
    await serving('ext-authz-grpc-service-v3.yaml', tokenSession);
    assert.ok(grpcAuthz.seen.slice(before).every((s) => s.path === PATHS[1]));
  });

  it('HTTP service', async () => {
    await serving('ext-authz-http-service.yaml', tokenSession);
    assert.equal(httpAuthz.seen.at(-1)?.url, '/service');
  });

  it('OPA service: GET allowed as OPA, POST denied', async () => {
    await serving('ext-authz-opa-service-v2.yaml', async (port) => {
      let res = await send(port, 'GET', '/service');
      for (let i = 0; i < 5 && res.status === 403; i++) res = await send(port, 'GET', '/service');
      assert.equal(res.body, 'Hello OPA from behind Envoy!');
      assert.equal((await send(port, 'POST', '/service', {}, 'x')).status, 403);
    });
  });
});
