/**
 * Child processes of the data-plane benchmark: finding executables, free ports, spawning a
 * peer (optionally pinned to CPUs with `taskset`), and reading its CPU time and RSS from
 * `/proc` summed over the whole process tree (nginx master + worker, proxy primary + workers).
 */
import { type ChildProcess, spawn } from 'node:child_process';
import { accessSync, constants, readdirSync, readFileSync } from 'node:fs';
import { type AddressInfo, createConnection, createServer } from 'node:net';
import { join } from 'node:path';

/** Clock ticks per second of `/proc/<pid>/stat` times (`getconf CLK_TCK`; 100 on Linux). */
const CLOCK_TICKS = 100;

/** Full path of an executable on `PATH` (plus the sbin folders nginx/haproxy live in), or undefined. */
export function findExecutable(name: string): string | undefined {
  const dirs = [...(process.env.PATH ?? '').split(':'), '/usr/sbin', '/sbin', '/usr/local/sbin'];
  for (const dir of dirs.filter(Boolean)) {
    try {
      accessSync(join(dir, name), constants.X_OK);
      return join(dir, name);
    } catch {}
  }
  return undefined;
}

/**
 * A port free right now on 127.0.0.1, for peers (nginx, HAProxy) whose config needs a number.
 * Another process could take it before the peer binds; the peer then fails to start, loudly.
 */
export async function freePort(): Promise<number> {
  const server = createServer();
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  const { port } = server.address() as AddressInfo;
  await new Promise<void>((resolve) => server.close(() => resolve()));
  return port;
}

/** A running peer: its process, the captured stderr, and a stop that waits for the exit. */
export interface Peer {
  name: string;
  child: ChildProcess;
  output(): string;
  stop(): Promise<void>;
}

/**
 * Spawns `command args`, pinned to `cpus` (a taskset list like `"1"`) when given.
 * stdout and stderr are captured so a failing peer can say why.
 */
export function spawnPeer(name: string, command: string, args: string[], cpus?: string, cwd?: string): Peer {
  const pinned = cpus ? ['taskset', ['-c', cpus, command, ...args]] : [command, args];
  const child = spawn(pinned[0] as string, pinned[1] as string[], { cwd, stdio: ['ignore', 'pipe', 'pipe'] });
  let output = '';
  const keep = (d: Buffer) => {
    output = (output + d.toString()).slice(-4000);
  };
  child.stdout?.on('data', keep);
  child.stderr?.on('data', keep);
  const exited = new Promise<void>((resolve) => child.once('exit', () => resolve()));
  return {
    name,
    child,
    output: () => output,
    async stop() {
      if (child.exitCode !== null || child.signalCode !== null) return;
      child.kill('SIGTERM');
      const timer = setTimeout(() => child.kill('SIGKILL'), 3000);
      await exited;
      clearTimeout(timer);
    },
  };
}

/** Resolves once `port` on 127.0.0.1 accepts a TCP connection; rejects if `peer` exits or after `timeoutMs`. */
export async function waitForPort(peer: Peer, port: number, timeoutMs = 15000): Promise<void> {
  const deadline = Date.now() + timeoutMs;
  for (;;) {
    if (peer.child.exitCode !== null) {
      throw new Error(
        `${peer.name} exited with ${peer.child.exitCode} before listening: ${peer.output().trim()}`,
      );
    }
    const open = await new Promise<boolean>((resolve) => {
      const socket = createConnection({ host: '127.0.0.1', port }, () => {
        socket.destroy();
        resolve(true);
      });
      socket.once('error', () => resolve(false));
    });
    if (open) return;
    if (Date.now() > deadline) throw new Error(`${peer.name} not listening on ${port} after ${timeoutMs} ms`);
    await new Promise((r) => setTimeout(r, 50));
  }
}

interface ProcStat {
  ppid: number;
  /** utime and stime, in clock ticks. */
  user: number;
  sys: number;
}

function readStat(pid: number): ProcStat | undefined {
  try {
    const text = readFileSync(`/proc/${pid}/stat`, 'utf8');
    // The command name may hold spaces and parentheses: the fields start after the last ')'.
    const fields = text.slice(text.lastIndexOf(')') + 2).split(' ');
    return { ppid: Number(fields[1]), user: Number(fields[11]), sys: Number(fields[12]) };
  } catch {
    return undefined;
  }
}

/** `pid` and all its descendants (taskset execs in place, so the pid is the peer's own). */
function processTree(pid: number): number[] {
  const children = new Map<number, number[]>();
  for (const entry of readdirSync('/proc')) {
    const child = Number(entry);
    if (!Number.isInteger(child)) continue;
    const stat = readStat(child);
    if (!stat) continue;
    const list = children.get(stat.ppid) ?? [];
    list.push(child);
    children.set(stat.ppid, list);
  }
  const tree = [pid];
  for (let i = 0; i < tree.length; i++) tree.push(...(children.get(tree[i] as number) ?? []));
  return tree;
}

/** CPU seconds in user and in system mode used so far by `pid` and its descendants. */
export function cpuSeconds(pid: number): { user: number; sys: number } {
  let user = 0;
  let sys = 0;
  for (const p of processTree(pid)) {
    const stat = readStat(p);
    user += stat?.user ?? 0;
    sys += stat?.sys ?? 0;
  }
  return { user: user / CLOCK_TICKS, sys: sys / CLOCK_TICKS };
}

/** Resident memory in bytes of `pid` and its descendants (VmRSS of each). */
export function rssBytes(pid: number): number {
  let kb = 0;
  for (const p of processTree(pid)) {
    try {
      const match = /^VmRSS:\s+(\d+) kB/m.exec(readFileSync(`/proc/${p}/status`, 'utf8'));
      kb += Number(match?.[1] ?? 0);
    } catch {}
  }
  return kb * 1024;
}

/** A resident set split by what maps it (bytes). */
export interface RssParts {
  /** Pages of files: the `node` binary's code and data, shared libraries (the page cache's). */
  file: number;
  /** Anonymous mappings of exactly 256 KiB: V8's heap pages, one mapping each. */
  v8: number;
  /** The other anonymous memory: malloc (`[heap]`, the threads' arenas), stacks, V8's code range. */
  rest: number;
}

/** The start of a mapping's line in `/proc/PID/smaps`: `start-end perms offset dev inode [name]`. */
const MAPPING = /^([0-9a-f]+)-([0-9a-f]+) \S+ \S+ \S+ \d+\s*(.*)$/;
const V8_PAGE_BYTES = 256 * 1024;

/** `RssParts` of one `/proc/PID/smaps` text; lines it does not know are skipped. */
export function rssPartsOf(smaps: string): RssParts {
  const parts: RssParts = { file: 0, v8: 0, rest: 0 };
  let current: keyof RssParts | null = null;
  for (const line of smaps.split('\n')) {
    const mapping = MAPPING.exec(line);
    if (mapping) {
      const size = Number.parseInt(mapping[2] as string, 16) - Number.parseInt(mapping[1] as string, 16);
      const name = mapping[3] as string;
      current = name.startsWith('/') ? 'file' : name === '' && size === V8_PAGE_BYTES ? 'v8' : 'rest';
      continue;
    }
    const rss = /^Rss:\s+(\d+) kB/.exec(line);
    if (rss && current) parts[current] += Number(rss[1]) * 1024;
  }
  return parts;
}

/** `RssParts` of `pid` and its descendants. */
export function rssParts(pid: number): RssParts {
  const sum: RssParts = { file: 0, v8: 0, rest: 0 };
  for (const p of processTree(pid)) {
    try {
      const parts = rssPartsOf(readFileSync(`/proc/${p}/smaps`, 'utf8'));
      sum.file += parts.file;
      sum.v8 += parts.v8;
      sum.rest += parts.rest;
    } catch {}
  }
  return sum;
}
