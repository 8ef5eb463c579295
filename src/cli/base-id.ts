import { createServer, type Server } from 'node:net';
import { writeOutputFile } from './output-file.js';

/** How many base IDs `--use-dynamic-base-id` tries before giving up. */
const MAX_PROBES = 1000;

/** A base ID's reservation socket: abstract (`@name`) on Linux, else a socket file. */
function reservationAddress(socketPath: string, baseId: number): string {
  const name = `${socketPath}_base_${baseId}`;
  return name.startsWith('@') ? `\0${name.slice(1)}` : name;
}

function listen(address: string): Promise<Server | null> {
  return new Promise((resolve) => {
    const server = createServer();
    server.once('error', () => resolve(null));
    server.listen(address, () => resolve(server));
  });
}

/**
 * `--use-dynamic-base-id`: the lowest base ID no other proxy on this machine holds, found
 * by binding a reservation socket named after `--socket-path` and the ID; the socket stays
 * bound (without keeping the process alive) for the life of the process.
 */
export async function reserveDynamicBaseId(socketPath: string): Promise<number> {
  for (let id = 0; id < MAX_PROBES; id++) {
    const server = await listen(reservationAddress(socketPath, id));
    if (server) {
      server.unref();
      return id;
    }
  }
  throw new Error(`--use-dynamic-base-id: base IDs 0..${MAX_PROBES - 1} are all in use on this machine`);
}

/** `--base-id-path`: the base ID in decimal, as the reference writes it. */
export function writeBaseId(path: string, baseId: number): void {
  writeOutputFile('--base-id-path', path, String(baseId));
}
