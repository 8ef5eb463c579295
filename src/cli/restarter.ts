/**
 * `proxy restarter -- ARGS`: the hot-restart wrapper (the reference's `hot-restarter.py`).
 * Starts epoch 0 of `proxy ARGS`; SIGHUP starts the next epoch with `RESTART_EPOCH` set;
 * SIGTERM and SIGINT go to every epoch; exits with the last epoch's status once none is left.
 * Each epoch has an IPC channel to the wrapper, over which a parent epoch's listening sockets
 * reach its child (`src/server/hot-restart/`): Node passes file descriptors only over such a
 * channel, not over a plain socket. docs/hot-restart.md has the design and a systemd unit.
 */
import { type ChildProcess, spawn } from 'node:child_process';
import { isSocketHandover } from '../hot-restart-protocol.js';

const USAGE = 'usage: proxy restarter -- PROXY_ARGS (SIGHUP: hot restart; SIGTERM/SIGINT: drain and stop)';

/** The Node arguments that run this same program again: the script, or `-e CODE --`. */
function selfCommand(): string[] {
  const evalMode = process.execArgv.some((a) => ['-e', '--eval', '-p', '--print'].includes(a));
  return evalMode ? [...process.execArgv, '--'] : [...process.execArgv, process.argv[1] as string];
}

function say(message: string): void {
  process.stderr.write(`restarter: ${message}\n`);
}

/** A signal's conventional exit status (128 + its number). */
function signalStatus(signal: NodeJS.Signals): number {
  const numbers: Partial<Record<NodeJS.Signals, number>> = { SIGHUP: 1, SIGINT: 2, SIGKILL: 9, SIGTERM: 15 };
  return 128 + (numbers[signal] ?? 0);
}

export function runRestarter(argv: string[]): Promise<number> {
  const args = argv[0] === '--' ? argv.slice(1) : argv;
  if (args.length === 0 || args.includes('--help') || args.includes('-h')) {
    process.stderr.write(`${USAGE}\n`);
    return Promise.resolve(args.length === 0 ? 1 : 0);
  }
  if (args.some((a) => a === '--restart-epoch' || a.startsWith('--restart-epoch='))) {
    say('the restarter sets the epoch itself (RESTART_EPOCH); leave --restart-epoch out');
    return Promise.resolve(1);
  }
  const command = selfCommand();
  const epochs = new Map<number, ChildProcess>();
  let stopping = false;
  return new Promise((resolve) => {
    const start = () => {
      // The one after the newest running epoch: an epoch that failed to take over is retried.
      const epoch = Math.max(-1, ...epochs.keys()) + 1;
      const child = spawn(process.execPath, [...command, ...args], {
        stdio: ['inherit', 'inherit', 'inherit', 'ipc'],
        env: { ...process.env, RESTART_EPOCH: String(epoch), PROXY_RESTARTER_PID: String(process.pid) },
      });
      epochs.set(epoch, child);
      say(`started epoch ${epoch} (pid ${child.pid})`);
      child.on('message', (msg: unknown, handle: unknown) => relay(msg, handle));
      child.on('exit', (code, signal) => {
        epochs.delete(epoch);
        say(`epoch ${epoch} exited (${signal ?? `status ${code}`})`);
        if (epochs.size > 0) return;
        for (const s of ['SIGHUP', 'SIGTERM', 'SIGINT'] as const) process.off(s, onSignal);
        resolve(code ?? signalStatus(signal ?? 'SIGTERM'));
      });
    };
    /** A listening socket from a parent epoch goes on to the epoch it is for, then is closed here. */
    const relay = (msg: unknown, handle: unknown) => {
      if (!isSocketHandover(msg) || !handle) return;
      const closeHere = () => (handle as { close(): void }).close();
      const target = epochs.get(msg.to);
      if (!target?.connected) {
        closeHere();
        return;
      }
      target.send(msg, handle as never, {}, closeHere);
    };
    const onSignal = (signal: NodeJS.Signals) => {
      if (signal === 'SIGHUP') {
        if (stopping) say('SIGHUP while stopping: no new epoch');
        else start();
        return;
      }
      stopping = true;
      say(`${signal}: passing it to ${epochs.size} epoch(s)`);
      for (const child of epochs.values()) child.kill(signal);
    };
    for (const s of ['SIGHUP', 'SIGTERM', 'SIGINT'] as const) process.on(s, onSignal);
    start();
  });
}
