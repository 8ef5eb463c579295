import assert from 'node:assert/strict';
import * as net from 'node:net';
import { after, before, describe, it } from 'node:test';
import bunyan from 'bunyan';
import { runtimeModified } from '../../events/index.js';
import { handlers } from '../../src/admin/handlers/index.js';
import type { HandlerDescriptor } from '../../src/admin/registry.js';
import { createLoggers } from '../../src/logging/loggers.js';
import { adminBootstrap, startTestAdmin, type TestAdmin } from '../helpers/admin.js';

const boom: HandlerDescriptor = {
  path: '/boom',
  help: 'always fails',
  mutates: false,
  params: [],
  handle: () => {
    throw new Error('secret detail /etc/passwd');
  },
};

describe('admin adapter', () => {
  let admin: TestAdmin;
  before(async () => {
    admin = await startTestAdmin(adminBootstrap(), {}, { table: [...handlers, boom] });
  });
  after(() => admin.close());

  it('adds the admin headers and no X-Powered-By or CORS header', async () => {
    const res = await admin.get('/ready');
    assert.equal(res.status, 200);
    assert.equal(res.headers.get('content-type'), 'text/plain; charset=UTF-8');
    assert.equal(res.headers.get('cache-control'), 'no-cache, max-age=0');
    assert.equal(res.headers.get('x-content-type-options'), 'nosniff');
    assert.equal(res.headers.get('x-powered-by'), null);
    assert.equal(res.headers.get('access-control-allow-origin'), null);
    assert.equal(await res.text(), 'LIVE\n');
  });

  it('answers an unknown path with 404 and the help list', async () => {
    const res = await admin.get('/nope');
    assert.equal(res.status, 404);
    const body = await res.text();
    assert.ok(body.startsWith('invalid path. admin commands are:\n  /: Admin home page\n'), body);
    assert.match(body, /\n {2}\/clusters: upstream cluster status\n/);
  });

  it('lists the served table in /help and on the home page, extra endpoints included', async () => {
    const help = await admin.get('/help');
    assert.equal(help.status, 200);
    assert.match(await help.text(), /\n {2}\/boom: always fails\n/);
    assert.match(await (await admin.get('/')).text(), /boom/);
  });

  it('matches paths exactly', async () => {
    assert.equal((await admin.get('/clusters/')).status, 404);
    assert.equal((await admin.get('/cluster')).status, 404);
    assert.equal((await admin.get('//quitquitquit')).status, 404);
  });

  it('lists endpoints in /help sorted by path, mutations included', async () => {
    const body = await (await admin.get('/help')).text();
    const paths = body
      .split('\n')
      .slice(1)
      .filter(Boolean)
      .map((l) => l.trim().split(': ')[0]!);
    assert.deepEqual(paths, [...paths].sort());
    for (const p of ['/quitquitquit', '/runtime_modify', '/config_dump', '/server_info'])
      assert.ok(paths.includes(p));
  });

  it('refuses GET on every mutating endpoint with 400 and changes nothing', async () => {
    const mutating = handlers.filter((h) => h.mutates);
    assert.ok(mutating.length >= 10);
    for (const h of mutating) {
      const seq = admin.ctx.store.state.seq;
      const res = await admin.get(`${h.path}?level=debug&enable=y&a=b`);
      assert.equal(res.status, 400, h.path);
      assert.equal(await res.text(), 'Method GET not allowed, POST required.\n', h.path);
      assert.equal(admin.ctx.store.state.seq, seq, `${h.path} dispatched an event on GET`);
    }
    assert.deepEqual(admin.shutdownCodes, []);
  });

  it('answers a bad query value with 400 and a usage line', async () => {
    const res = await admin.get('/listeners?format=yaml');
    assert.equal(res.status, 400);
    assert.equal(
      await res.text(),
      "invalid value 'yaml' for parameter 'format' of /listeners: must be one of text, json\nusage: /listeners?format=<text|json>\n",
    );
  });

  it('answers a throwing handler with a generic 500 and keeps serving', async () => {
    const res = await admin.get('/boom');
    assert.equal(res.status, 500);
    const body = await res.text();
    assert.equal(body, 'internal error while handling /boom; the proxy log has the details\n');
    assert.equal((await admin.get('/ready')).status, 200);
  });

  it('reads POST parameters from a form-encoded body', async () => {
    const res = await admin.post('/runtime_modify', 'form.key=1');
    assert.equal(res.status, 200);
    assert.equal(admin.ctx.store.state.runtime.layers.at(-1)?.values['form.key'], '1');
  });

  it('folds dry_run into a copy: a JSON Patch answer and no dispatch', async () => {
    const seq = admin.ctx.store.state.seq;
    const res = await admin.post('/healthcheck/fail?dry_run=1');
    assert.equal(res.status, 200);
    assert.deepEqual(await res.json(), [{ op: 'replace', path: '/server/healthCheckFailed', value: true }]);
    assert.equal(admin.ctx.store.state.seq, seq);
    assert.equal(admin.ctx.store.state.server.healthCheckFailed, false);
  });

  it('refuses ?at= without an event history, and on endpoints that render no snapshot', async () => {
    const noHistory = await admin.get('/clusters?at=1');
    assert.equal(noHistory.status, 400);
    assert.match(await noHistory.text(), /--event-log/);
    const notSnapshot = await admin.get('/memory?at=1');
    assert.equal(notSnapshot.status, 400);
  });

  it('answers ?at= older than the history retains with 410, and a future one with 404', async () => {
    const kept = await startTestAdmin(adminBootstrap(), {}, { history: { capacity: 2, checkpointEvery: 1 } });
    try {
      const { ctx } = kept;
      const first = ctx.store.state.seq;
      for (let i = 0; i < 6; i++) ctx.store.dispatch(runtimeModified({ values: { t: String(i) } }), 'test');
      const gone = await kept.get(`/runtime?at=${first}`);
      assert.equal(gone.status, 410);
      assert.match(await gone.text(), /older than the history retains; the oldest kept is \d+/);
      const latest = ctx.store.state.seq;
      const now = await kept.get(`/runtime?at=${latest}`);
      assert.equal(now.status, 200);
      assert.equal(JSON.parse(await now.text()).entries.t.final_value, '5');
      const future = await kept.get(`/runtime?at=${latest + 10}`);
      assert.equal(future.status, 404);
      assert.match(await future.text(), /has not happened yet/);
    } finally {
      await kept.close();
    }
  });

  // Root cause (issue 25): the body parser read a body past the limit off to its end before
  // answering 413, so a client that declared 2 MB and sent a few bytes (or streamed without
  // end) held the admin connection with no answer at all.
  it('answers a declared oversized body with 413 at once, without waiting for it', async () => {
    const { port } = new URL(admin.base);
    for (const head of [
      'POST /runtime_modify HTTP/1.1\r\nHost: x\r\nContent-Length: 2000000\r\n\r\na=1',
      'POST /runtime_modify HTTP/1.1\r\nHost: x\r\nTransfer-Encoding: chunked\r\n\r\n',
    ]) {
      const socket = net.connect(Number(port), '127.0.0.1');
      socket.on('error', () => {});
      let out = '';
      socket.on('data', (d: Buffer) => (out += d.toString('latin1')));
      const closed = new Promise<void>((resolve) => socket.on('close', () => resolve()));
      socket.write(head);
      // The chunked one streams more than the limit and keeps going.
      const chunk = `100000\r\n${'a'.repeat(0x100000)}\r\n`;
      if (head.includes('chunked')) for (let i = 0; i < 3 && !socket.destroyed; i++) socket.write(chunk);
      const timer = setTimeout(() => socket.destroy(), 5000);
      await closed;
      clearTimeout(timer);
      assert.match(out, /^HTTP\/1\.1 413 /, String(head.split('\r\n')[2]));
      assert.match(out, /bad request body: larger than 1mb/);
    }
  });

  it('answers an oversized body with 413 and no stack trace', async () => {
    const res = await admin.post('/runtime_modify', `k=${'x'.repeat(2 * 1024 * 1024)}`);
    assert.equal(res.status, 413);
    const body = await res.text();
    assert.doesNotMatch(body, /at |node_modules/);
  });
});

it('warns loudly at start-up when the admin listens beyond loopback', async () => {
  const base = createLoggers({ logLevel: 'critical' });
  const ring = new bunyan.RingBuffer({ limit: 20 });
  const captured = bunyan.createLogger({
    name: 'test',
    streams: [{ type: 'raw', stream: ring, level: 'warn' }],
  });
  const admin = await startTestAdmin(
    { admin: { address: { socket_address: { address: '0.0.0.0', port_value: 0 } } } },
    {},
    { log: { ...base, get: () => captured } },
  );
  try {
    const warning = ring.records.find((r: { msg: string }) => r.msg.includes('non-loopback'));
    assert.ok(warning, 'no warning logged');
    assert.match(warning.msg, /0\.0\.0\.0/);
    assert.equal((await admin.get('/ready')).status, 200);
  } finally {
    await admin.close();
  }
});
