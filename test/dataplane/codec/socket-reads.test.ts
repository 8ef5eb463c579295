import assert from 'node:assert/strict';
import { once } from 'node:events';
import * as net from 'node:net';
import { test } from 'node:test';
import { setTimeout as sleep } from 'node:timers/promises';
import { owned, readInto } from '../../../src/dataplane/codec/socket-reads.js';
import { holdReads } from '../../../src/dataplane/network-filters/hold-reads.js';

/** A server on 127.0.0.1 and one client connected to it; resolves with both ends. */
async function pair(): Promise<{ server: net.Server; accepted: net.Socket; client: net.Socket }> {
  const server = net.createServer();
  server.listen(0, '127.0.0.1');
  await once(server, 'listening');
  const accepting = once(server, 'connection');
  const client = net.connect((server.address() as net.AddressInfo).port, '127.0.0.1');
  const [accepted] = (await accepting) as [net.Socket];
  return { server, accepted, client };
}

async function until(check: () => boolean, what: string): Promise<void> {
  for (let i = 0; i < 200 && !check(); i++) await sleep(10);
  assert.ok(check(), what);
}

test('an accepted socket reads into the shared buffer: views, in order, then its end', async (t) => {
  const { server, accepted, client } = await pair();
  t.after(() => {
    client.destroy();
    accepted.destroy();
    server.close();
  });
  const got: string[] = [];
  let views = 0;
  assert.equal(
    readInto(accepted, (chunk) => {
      if (owned(chunk) !== chunk) views += 1;
      got.push(chunk.toString('latin1'));
      return true;
    }),
    true,
  );
  accepted.resume();
  let dataEvents = 0;
  accepted.on('data', () => {
    dataEvents += 1;
  });
  const ended = once(accepted, 'end');
  client.write('GET / HTTP/1.1\r\n');
  await until(() => got.join('') === 'GET / HTTP/1.1\r\n', 'first bytes read');
  client.end('host: x\r\n\r\n');
  await ended;
  assert.equal(got.join(''), 'GET / HTTP/1.1\r\nhost: x\r\n\r\n');
  assert.equal(views, got.length, 'every read is a view of the shared buffer');
  assert.equal(dataEvents, 0, 'no data events: the Readable is skipped');
  assert.equal(accepted.bytesRead, 27);
});

test('pause stops the reads and resume takes them up again; a false return stops them too', async (t) => {
  const { server, accepted, client } = await pair();
  t.after(() => {
    client.destroy();
    accepted.destroy();
    server.close();
  });
  let got = '';
  let stopAfterNext = false;
  readInto(accepted, (chunk) => {
    got += chunk.toString('latin1');
    if (stopAfterNext) {
      stopAfterNext = false;
      return false;
    }
    return true;
  });
  accepted.resume();
  accepted.pause();
  client.write('held');
  await sleep(100);
  assert.equal(got, '', 'nothing is read while paused');
  accepted.resume();
  await until(() => got === 'held', 'the held bytes after resume');
  stopAfterNext = true;
  client.write('one');
  await until(() => got === 'heldone', 'the read that returned false');
  client.write('two');
  await sleep(100);
  assert.equal(got, 'heldone', 'reading stopped after the false return');
  accepted.resume();
  await until(() => got === 'heldonetwo', 'reading again after resume');
});

test('a socket with bytes already in its buffer keeps its data events', async (t) => {
  const { server, accepted, client } = await pair();
  t.after(() => {
    client.destroy();
    accepted.destroy();
    server.close();
  });
  accepted.pause();
  client.write('early');
  await until(() => accepted.readableLength > 0, 'bytes buffered while paused');
  assert.equal(
    readInto(accepted, () => true),
    false,
  );
  const [chunk] = (await once(accepted.resume(), 'data')) as [Buffer];
  assert.equal(chunk.toString(), 'early');
  assert.equal(owned(chunk), chunk, 'a Buffer of its own, not a view');
});

test('a socket that reads into the buffer already is left as it is', async (t) => {
  const { server, accepted, client } = await pair();
  t.after(() => {
    client.destroy();
    accepted.destroy();
    server.close();
  });
  assert.equal(
    readInto(accepted, () => true),
    true,
  );
  assert.equal(
    readInto(accepted, () => true),
    false,
  );
});

test('a socket whose reads a read filter holds keeps its data path', async (t) => {
  const { server, accepted, client } = await pair();
  t.after(() => {
    client.destroy();
    accepted.destroy();
    server.close();
  });
  const release = holdReads(accepted, () => {});
  assert.equal(
    readInto(accepted, () => true),
    false,
  );
  release();
  assert.equal(
    readInto(accepted, () => true),
    true,
  );
});
