import assert from 'node:assert/strict';
import { request } from 'node:http';
import { after, before, describe, it } from 'node:test';
import { handlers } from '../../src/admin/handlers/index.js';
import type { HandlerDescriptor } from '../../src/admin/registry.js';
import { adminBootstrap, startTestAdmin, type TestAdmin } from '../helpers/admin.js';

const PIECES = 200;

/** Busy for `ms`: a render that holds the event loop while it makes each piece. */
function spin(ms: number): void {
  const end = performance.now() + ms;
  while (performance.now() < end) {}
}

// A render of 200 pieces taking 2 ms each (400 ms in all), with empty pieces between.
const slow: HandlerDescriptor = {
  path: '/slow',
  help: 'a long streamed render',
  mutates: false,
  params: [],
  handle: () => ({
    status: 200,
    contentType: 'text/plain; charset=UTF-8',
    body: (function* () {
      for (let i = 0; i < PIECES; i++) {
        spin(2);
        // an empty piece marks a pause point; it must not end a chunked body
        yield '';
        yield `piece ${i}\n`;
      }
    })(),
  }),
};
const broken: HandlerDescriptor = {
  path: '/broken',
  help: 'a streamed render that fails half way',
  mutates: false,
  params: [],
  handle: () => ({
    status: 200,
    contentType: 'text/plain; charset=UTF-8',
    body: (function* () {
      yield 'first\n';
      throw new Error('render failed');
    })(),
  }),
};

describe('admin streamed answers', () => {
  let admin: TestAdmin;
  before(async () => {
    admin = await startTestAdmin(adminBootstrap(), {}, { table: [...handlers, slow, broken] });
  });
  after(() => admin.close());

  it('writes every piece, in order', async () => {
    const body = await (await admin.get('/slow')).text();
    assert.equal(body, Array.from({ length: PIECES }, (_, i) => `piece ${i}\n`).join(''));
  });

  it('answers /ready while a long render is being written', async () => {
    const started = performance.now();
    let slowDone = 0;
    const slowBody = admin.get('/slow').then(async (res) => {
      await res.text();
      slowDone = performance.now() - started;
    });
    await new Promise((r) => setTimeout(r, 50));
    const ready = await admin.get('/ready');
    const readyAt = performance.now() - started;
    assert.equal(await ready.text(), 'LIVE\n');
    await slowBody;
    assert.ok(readyAt < slowDone, `/ready answered at ${readyAt} ms, the render ended at ${slowDone} ms`);
  });

  it('cuts the connection when a render fails after its head was sent', async () => {
    const outcome = await new Promise<string>((resolve) => {
      const req = request(`${admin.base}/broken`, (res) => {
        res.on('data', () => {});
        res.on('end', () => resolve('ended'));
        res.on('error', () => resolve('cut'));
        res.on('aborted', () => resolve('cut'));
      });
      req.on('error', () => resolve('cut'));
      req.end();
    });
    assert.equal(outcome, 'cut');
  });
});
