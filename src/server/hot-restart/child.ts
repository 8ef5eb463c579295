/**
 * The new epoch's side of a hot restart: connects to the running epoch's domain socket,
 * introduces itself, takes over the event log and the listening sockets, and, once LIVE,
 * tells the parent to drain and follows it until it exits.
 */
import { connect, type Socket } from 'node:net';
import type { Options } from '../../options.js';
import type { SocketSource } from '../../dataplane/listeners/sockets.js';
import {
  type ChildMessage,
  domainSocket,
  isSocketHandover,
  type ParentMessage,
  readLines,
  writeLine,
} from '../../hot-restart-protocol.js';

/** A parent that does not answer a step within this is given up on. */
const ANSWER_MS = 5000;

type Step = 'draining' | 'drained' | 'exited';

export class ParentLink implements SocketSource {
  private readonly waiters = new Map<string, (msg: ParentMessage) => void>();
  /** Handles that came over IPC, and sockets waiting for theirs, by request id. */
  private readonly handles = new Map<number, object>();
  private readonly handleWaiters = new Map<number, (handle: object) => void>();
  private nextId = 1;
  private onStep: (step: Step, connections: number) => void = () => {};
  private closed = false;

  /** Known once the parent welcomed this epoch (`connect` resolves only then). */
  parentEpoch = -1;
  firstStartedAt = 0;

  private constructor(
    private readonly conn: Socket,
    private readonly epoch: number,
  ) {
    readLines<ParentMessage>(conn, (msg) => this.onMessage(msg));
    process.on('message', this.onIpc);
    conn.on('close', () => {
      this.closed = true;
      process.off('message', this.onIpc);
      this.onStep('exited', 0);
    });
  }

  /**
   * Connects to epoch `restartEpoch - 1` and says hello; rejects with the reason when nothing
   * runs there or the parent refuses (another version, base ID or epoch), and the parent
   * keeps serving.
   */
  static async connect(options: Options, version: string): Promise<ParentLink> {
    const epoch = options.restartEpoch;
    const where = domainSocket(options.socketPath, 'parent', options.baseId, epoch - 1);
    const socket = await new Promise<Socket>((resolve, reject) => {
      const s = connect(where.address);
      s.once('connect', () => resolve(s));
      s.once('error', (err: NodeJS.ErrnoException) =>
        reject(
          new Error(
            `hot restart to epoch ${epoch}: no epoch ${epoch - 1} with base ID ${options.baseId} ` +
              `answers on ${where.name} (${err.code ?? err.message})`,
          ),
        ),
      );
    });
    const link = new ParentLink(socket, epoch);
    const hello: ChildMessage = {
      type: 'hello',
      version,
      baseId: options.baseId,
      epoch,
      // Started directly (systemd, the reference's hot-restarter.py): no socket can come over
      // IPC, so every one is bound beside the parent's with SO_REUSEPORT.
      ipc: process.send !== undefined,
    };
    const answer = await link.request(hello, 'hello').catch((err: Error) => {
      socket.destroy();
      throw new Error(`hot restart to epoch ${epoch}: ${err.message}`);
    });
    if (answer.type !== 'welcome') {
      socket.destroy();
      const why = answer.type === 'refused' ? answer.error : `unexpected answer '${answer.type}'`;
      throw new Error(`hot restart to epoch ${epoch} refused by epoch ${epoch - 1}: ${why}`);
    }
    link.parentEpoch = answer.epoch;
    link.firstStartedAt = answer.firstStartedAt;
    return link;
  }

  /** Asks the parent to stop writing the event log; resolves once it has. */
  async releaseLog(): Promise<void> {
    await this.request({ type: 'release-log' }, 'log-released');
  }

  async socket(address: string): Promise<object | null> {
    // A parent that is gone holds no address any more, and one without a way to send it keeps
    // it: bind it (beside the parent's, with SO_REUSEPORT).
    if (this.closed || !process.send) return null;
    const id = this.nextId++;
    const answer = await this.request({ type: 'socket', id, address }, `socket:${id}`);
    if (answer.type !== 'socket' || !answer.sent) return null;
    const handle = this.handles.get(id);
    if (handle) {
      this.handles.delete(id);
      return handle;
    }
    return new Promise<object>((resolve, reject) => {
      const timer = setTimeout(() => {
        this.handleWaiters.delete(id);
        reject(new Error(`hot restart: the socket for ${address} did not arrive over IPC`));
      }, ANSWER_MS);
      this.handleWaiters.set(id, (h) => {
        clearTimeout(timer);
        resolve(h);
      });
    });
  }

  /** Tells the parent to drain and exit; `onStep` hears each step, `exited` when it is gone. */
  drain(onStep: (step: Step, connections: number) => void): void {
    this.onStep = onStep;
    if (this.closed) onStep('exited', 0);
    else writeLine(this.conn, { type: 'drain' });
  }

  private request(msg: ChildMessage, key: string): Promise<ParentMessage> {
    return new Promise((resolve, reject) => {
      if (this.closed) {
        reject(new Error('the parent epoch went away'));
        return;
      }
      // A parent that closes the socket (or exits) answers nothing more.
      const onClose = () => {
        clearTimeout(timer);
        this.waiters.delete(key);
        reject(new Error(`the parent epoch went away before answering '${msg.type}'`));
      };
      this.conn.once('close', onClose);
      const timer = setTimeout(() => {
        this.waiters.delete(key);
        this.conn.off('close', onClose);
        reject(new Error(`the parent epoch did not answer '${msg.type}'`));
      }, ANSWER_MS);
      this.waiters.set(key, (answer) => {
        clearTimeout(timer);
        this.conn.off('close', onClose);
        resolve(answer);
      });
      writeLine(this.conn, msg);
    });
  }

  private onMessage(msg: ParentMessage): void {
    switch (msg.type) {
      case 'welcome':
      case 'refused':
        this.answer('hello', msg);
        break;
      case 'log-released':
        this.answer('log-released', msg);
        break;
      case 'socket':
        this.answer(`socket:${msg.id}`, msg);
        break;
      case 'draining':
      case 'drained':
        this.onStep(msg.type, msg.connections);
        break;
      case 'connections':
        this.onConnections?.(msg.connections);
        break;
      default:
        break;
    }
  }

  /** Hears the parent's open connection count while it drains (`server.parent_connections`). */
  onConnections: ((connections: number) => void) | null = null;

  private answer(key: string, msg: ParentMessage): void {
    const waiter = this.waiters.get(key);
    this.waiters.delete(key);
    waiter?.(msg);
  }

  private readonly onIpc = (msg: unknown, handle: unknown): void => {
    if (!isSocketHandover(msg) || msg.to !== this.epoch || !handle) return;
    const waiter = this.handleWaiters.get(msg.id);
    this.handleWaiters.delete(msg.id);
    if (waiter) waiter(handle as object);
    else this.handles.set(msg.id, handle as object);
  };
}
