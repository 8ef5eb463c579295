/**
 * The running epoch's side of a hot restart: listens on its domain socket for the next
 * epoch, checks that it is compatible, hands it the event log and the listening sockets, and
 * drains and exits when told. A child it refuses, or one that goes away before asking for the
 * drain, leaves this epoch serving.
 */
import { chmodSync, existsSync, rmSync } from 'node:fs';
import { connect, createServer, type Socket } from 'node:net';
import { hotRestartVersion } from '../../cli/hot-restart-version.js';
import type { ServerContext } from '../../context-core.js';
import { drainForShutdown, openConnections } from '../shutdown.js';
import {
  type ChildMessage,
  domainSocket,
  type ParentMessage,
  readLines,
  type SocketHandover,
  writeLine,
} from '../../hot-restart-protocol.js';

/** How often a draining parent tells its child how many connections it still has. */
const REPORT_MS = 250;
/** A connection that has not said hello within this is closed (a new epoch says it at once). */
const HELLO_MS = 10_000;

/**
 * Listens on this epoch's domain socket; stops with the process. Resolves once listening, or
 * logs why it cannot (this epoch then cannot be hot-restarted, but serves).
 */
export async function startHotRestartParent(ctx: ServerContext): Promise<void> {
  const { options } = ctx;
  const log = ctx.log.get('main');
  const where = domainSocket(options.socketPath, 'parent', options.baseId, options.restartEpoch);
  // A socket file left by a process that is gone would make the bind fail; one that a live
  // process answers on is not ours to take.
  if (!where.abstract && existsSync(where.address) && !(await answers(where.address))) {
    rmSync(where.address, { force: true });
  }
  /** The connection whose epoch was welcomed: it alone is taking over. */
  let taker: Socket | null = null;
  const children = new Set<Socket>();
  const server = createServer((socket) => {
    children.add(socket);
    socket.once('close', () => children.delete(socket));
    serveChild(ctx, socket, {
      claim: () => {
        if (taker) return false;
        taker = socket;
        return true;
      },
      release: () => {
        if (taker === socket) taker = null;
      },
    });
  });
  const bound = await new Promise<boolean>((resolve) => {
    server.once('error', (err) => {
      log.warn(
        { err, socket: where.name },
        'hot restart: cannot listen on the domain socket, so this epoch cannot be hot-restarted ' +
          '(another proxy with this base ID? give each one its own --base-id or --use-dynamic-base-id)',
      );
      resolve(false);
    });
    server.listen(where.address, () => resolve(true));
  });
  if (!bound) return;
  if (!where.abstract) chmodSync(where.address, options.socketMode);
  server.unref();
  log.info({ socket: where.name, epoch: options.restartEpoch }, 'hot restart: waiting for the next epoch');
  ctx.onShutdown(() => {
    // The child's connection would hold `close` open: it hears the exit as the socket closing.
    for (const socket of children) socket.destroy();
    return new Promise<void>((resolve) => server.close(() => resolve()));
  });
}

/** Whether a process accepts connections on the unix socket at `path`. */
function answers(path: string): Promise<boolean> {
  return new Promise((resolve) => {
    const probe = connect(path);
    probe.once('connect', () => {
      probe.destroy();
      resolve(true);
    });
    probe.once('error', () => resolve(false));
  });
}

/** Why `hello` cannot be answered with a welcome, or null. */
function refusal(ctx: ServerContext, hello: Extract<ChildMessage, { type: 'hello' }>): string | null {
  const { options } = ctx;
  const version = hotRestartVersion(options);
  if (hello.version !== version) {
    return `hot-restart version mismatch: this epoch runs ${version}, the new one ${hello.version}`;
  }
  if (hello.baseId !== options.baseId) {
    return `base ID mismatch: this epoch has ${options.baseId}, the new one ${hello.baseId}`;
  }
  if (hello.epoch !== options.restartEpoch + 1) {
    return `epoch ${hello.epoch} cannot follow epoch ${options.restartEpoch}; the next one is ${options.restartEpoch + 1}`;
  }
  return null;
}

/**
 * One epoch taking over at a time: `claim` is asked once a hello passes and fails while
 * another connection holds the claim; `release` gives it back when the connection closes.
 */
interface Takeover {
  claim(): boolean;
  release(): void;
}

function serveChild(ctx: ServerContext, socket: Socket, takeover: Takeover): void {
  const log = ctx.log.get('main');
  const epoch = ctx.options.restartEpoch;
  let childEpoch = -1;
  /** The child can receive sockets: both have the restarter's IPC channel. */
  let childIpc = false;
  let draining = false;
  // Whatever connects must introduce itself: a connection that never does (any local process
  // can reach the socket) is closed rather than kept for ever.
  const helloDeadline = setTimeout(() => socket.destroy(), HELLO_MS);
  helloDeadline.unref();
  socket.on('error', () => {});
  socket.on('close', () => {
    clearTimeout(helloDeadline);
    if (!draining && childEpoch >= 0) {
      log.warn({ epoch: childEpoch }, 'hot restart: the new epoch went away before taking over; serving on');
      ctx.sockets.resumeStopped();
      ctx.eventLog.resume();
    }
    takeover.release();
  });
  const reply = (msg: ParentMessage) => writeLine(socket, msg);
  readLines<ChildMessage>(socket, (msg) => {
    switch (msg.type) {
      case 'hello': {
        clearTimeout(helloDeadline);
        if (childEpoch >= 0) return;
        const why = refusal(ctx, msg) ?? (takeover.claim() ? null : 'another epoch is already taking over');
        if (why) {
          log.error({ epoch: msg.epoch }, `hot restart refused: ${why}`);
          reply({ type: 'refused', error: why });
          socket.end();
          return;
        }
        childEpoch = msg.epoch;
        childIpc = msg.ipc && process.send !== undefined;
        const state = ctx.store.state;
        log.info({ epoch: childEpoch }, 'hot restart: the next epoch is taking over');
        reply({
          type: 'welcome',
          epoch,
          firstStartedAt: state.server.hotRestart?.firstStartedAt ?? state.server.startedAt,
        });
        return;
      }
      case 'release-log':
        if (childEpoch < 0) return;
        void ctx.eventLog.release().then(() => {
          log.info({ epoch: childEpoch }, 'hot restart: event log handed to the next epoch');
          reply({ type: 'log-released' });
        });
        return;
      case 'socket':
        if (childEpoch < 0) return;
        // Without IPC the child binds beside this epoch's sockets (SO_REUSEPORT), which accept on.
        if (childIpc) void sendSocket(ctx, msg, childEpoch, reply);
        else reply({ type: 'socket', id: msg.id, address: msg.address, sent: false });
        return;
      case 'drain':
        if (childEpoch < 0 || draining) return;
        draining = true;
        drainAndExit(ctx, childEpoch, reply);
        return;
    }
  });
}

/** Sends the listening socket at `msg.address` through the restarter, then says whether it went. */
async function sendSocket(
  ctx: ServerContext,
  msg: Extract<ChildMessage, { type: 'socket' }>,
  childEpoch: number,
  reply: (msg: ParentMessage) => void,
): Promise<void> {
  const log = ctx.log.get('main');
  const offered = ctx.sockets.find(msg.address);
  // The server's own handle, not the server: the restarter must not start accepting on it.
  // With workers, the data-plane listeners are the worker threads' (a thread's handle cannot
  // leave it): the next epoch binds beside them (SO_REUSEPORT).
  const handle = (offered?.server as unknown as { _handle?: object } | undefined)?._handle ?? null;
  if (!handle || !process.send) {
    reply({ type: 'socket', id: msg.id, address: msg.address, sent: false });
    return;
  }
  const handover: SocketHandover = {
    proxyHotRestart: 'socket',
    to: childEpoch,
    id: msg.id,
    address: msg.address,
  };
  process.send(handover, handle as never, {}, (err: Error | null) => {
    if (err) log.error({ err, address: msg.address }, 'hot restart: cannot send a listening socket');
    else {
      log.info({ address: msg.address, epoch: childEpoch }, 'hot restart: listening socket handed over');
      offered?.onHandover();
    }
    reply({ type: 'socket', id: msg.id, address: msg.address, sent: !err });
  });
}

/**
 * The child is LIVE: drain as for a signal (`--drain-time-s`, `--drain-strategy`), telling
 * the child how many connections are left, and exit once none is or the drain time is over;
 * `--parent-shutdown-time-s` after the request the process exits whatever is left.
 */
function drainAndExit(ctx: ServerContext, childEpoch: number, reply: (msg: ParentMessage) => void): void {
  const log = ctx.log.get('main');
  log.info(
    {
      epoch: childEpoch,
      drainTimeS: ctx.options.drainTimeS,
      parentShutdownTimeS: ctx.options.parentShutdownTimeS,
    },
    'hot restart: draining for the next epoch',
  );
  // Whatever a shutdown step still waits for, the parent is gone by then.
  const hardStop = setTimeout(() => {
    log.warn('hot restart: parent shutdown time reached; exiting now');
    process.exit(0);
  }, ctx.options.parentShutdownTimeS * 1000);
  hardStop.unref();
  const report = setInterval(
    () => void openConnections(ctx).then((connections) => reply({ type: 'connections', connections })),
    REPORT_MS,
  );
  void openConnections(ctx).then((connections) => reply({ type: 'draining', connections }));
  void drainForShutdown(ctx, `hot restart to epoch ${childEpoch}`)
    .then(async () => {
      clearInterval(report);
      reply({ type: 'drained', connections: await openConnections(ctx) });
    })
    .catch((err) => log.error({ err }, 'hot restart: drain failed'))
    .finally(() => {
      log.info({ child: childEpoch }, 'hot restart: parent epoch exiting');
      void ctx.shutdown(0);
    });
}
