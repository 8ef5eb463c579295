/**
 * The gRPC peers of the gRPC benchmark, both real `@grpc/grpc-js`, run as child processes so
 * each one's CPU is its own:
 *
 * - `node grpc-peer.js server`: `/bench.Echo/Unary` answers its request's bytes, and
 *   `/bench.Echo/Chat` (bidirectional) answers each message with its bytes; prints
 *   `listening <port>` when ready.
 * - `node grpc-peer.js client <host:port> <unary|chat> <connections> <in flight> <seconds>`:
 *   keeps `in flight` calls (unary) or messages (one chat stream per connection) outstanding
 *   on each of `connections` channels for `seconds`, then prints one JSON line:
 *   `{"calls":N,"seconds":S,"p50":ms,"p99":ms,"errors":N}` (a chat message answered counts
 *   as a call; its latency is from its write to its echo).
 *
 * Messages are raw bytes (identity serializers): no protobuf codec stands between the load and
 * the wire, so the figures are gRPC framing, HTTP/2 and whatever is in between.
 */
import * as grpc from '@grpc/grpc-js';
import { rawMethod as method } from '../../test/helpers/grpc-upstream.js';

const ECHO = {
  Unary: method('/bench.Echo/Unary', false, false),
  Chat: method('/bench.Echo/Chat', true, true),
};
/** 100 bytes: a small RPC, like most of a mesh's. */
const MESSAGE = Buffer.alloc(100, 'm');

async function serve(): Promise<void> {
  const server = new grpc.Server();
  server.addService(ECHO, {
    Unary: (call: grpc.ServerUnaryCall<Buffer, Buffer>, done: grpc.sendUnaryData<Buffer>) =>
      done(null, call.request),
    Chat: (call: grpc.ServerDuplexStream<Buffer, Buffer>) => {
      call.on('data', (m: Buffer) => call.write(m));
      call.on('end', () => call.end());
      call.on('error', () => {});
    },
  });
  const port = await new Promise<number>((resolve, reject) =>
    server.bindAsync('127.0.0.1:0', grpc.ServerCredentials.createInsecure(), (err, p) =>
      err ? reject(err) : resolve(p),
    ),
  );
  process.stdout.write(`listening ${port}\n`);
  process.on('SIGTERM', () => {
    server.forceShutdown();
    process.exit(0);
  });
}

const Client = grpc.makeGenericClientConstructor(ECHO, 'Echo');
interface EchoClient extends grpc.Client {
  Unary(m: Buffer, done: (err: grpc.ServiceError | null, r?: Buffer) => void): grpc.ClientUnaryCall;
  Chat(): grpc.ClientDuplexStream<Buffer, Buffer>;
}

async function load(
  address: string,
  kind: string,
  connections: number,
  inFlight: number,
  seconds: number,
): Promise<void> {
  // A local subchannel pool gives every client its own connection (grpc-js shares one otherwise).
  const clients = Array.from(
    { length: connections },
    () =>
      new Client(address, grpc.credentials.createInsecure(), {
        'grpc.use_local_subchannel_pool': 1,
      }) as unknown as EchoClient,
  );
  await Promise.all(
    clients.map(
      (c) =>
        new Promise<void>((resolve, reject) =>
          c.waitForReady(Date.now() + 5000, (err) => (err ? reject(err) : resolve())),
        ),
    ),
  );
  const latencies: number[] = [];
  let errors = 0;
  let running = true;
  const started = performance.now();
  const finished: Promise<void>[] = [];
  if (kind === 'unary') {
    for (const c of clients) {
      for (let i = 0; i < inFlight; i++) {
        finished.push(
          new Promise<void>((resolve) => {
            const next = () => {
              if (!running) return resolve();
              const at = performance.now();
              c.Unary(MESSAGE, (err) => {
                if (err) errors++;
                else latencies.push(performance.now() - at);
                next();
              });
            };
            next();
          }),
        );
      }
    }
  } else if (kind === 'chat') {
    for (const c of clients) {
      finished.push(
        new Promise<void>((resolve) => {
          const call = c.Chat();
          const sent: number[] = [];
          const send = () => {
            sent.push(performance.now());
            call.write(MESSAGE);
          };
          call.on('data', () => {
            latencies.push(performance.now() - (sent.shift() as number));
            if (running) send();
            else if (sent.length === 0) call.end();
          });
          call.on('error', () => {
            errors++;
            resolve();
          });
          call.on('end', () => resolve());
          call.on('status', () => resolve());
          for (let i = 0; i < inFlight; i++) send();
        }),
      );
    }
  } else {
    throw new Error(`unknown call kind ${kind}: unary or chat`);
  }
  await new Promise((r) => setTimeout(r, seconds * 1000));
  running = false;
  const elapsed = (performance.now() - started) / 1000;
  const calls = latencies.length;
  // Calls still answering after the window are not counted; wait (bounded) so none is cut.
  await Promise.race([Promise.all(finished), new Promise((r) => setTimeout(r, 5000))]);
  latencies.length = calls;
  latencies.sort((a, b) => a - b);
  const at = (q: number) => latencies[Math.min(calls - 1, Math.floor(q * calls))] ?? Number.NaN;
  process.stdout.write(
    `${JSON.stringify({ calls, seconds: elapsed, p50: at(0.5), p99: at(0.99), errors })}\n`,
  );
  for (const c of clients) c.close();
  process.exit(0);
}

const [mode, address, kind, connections, inFlight, seconds] = process.argv.slice(2);
if (mode === 'server') await serve();
else if (mode === 'client' && address && kind)
  await load(address, kind, Number(connections ?? 10), Number(inFlight ?? 10), Number(seconds ?? 2));
else {
  process.stderr.write(
    'usage: grpc-peer server | grpc-peer client <host:port> <unary|chat> <connections> <in flight> <seconds>\n',
  );
  process.exit(2);
}
