import type { JsonObject } from '../../events/index.js';
import { numberOr, objectOf, stringOr } from '../../reducers/settings/values.js';

/** A listener's socket address as `ip:port`, or null when it binds none of its own (port 0). */
export function boundAddress(listener: JsonObject): string | null {
  const socket = objectOf(objectOf(listener.address).socket_address);
  const port = numberOr(socket.port_value, 0);
  if (port === 0) return null;
  const ip = stringOr(socket.address, '').toLowerCase();
  return ip.includes(':') ? `[${ip}]:${port}` : `${ip}:${port}`;
}

/**
 * Each listener of `listeners` (in order) whose address an earlier one has, as the reference
 * refuses it ("has duplicate address ... as existing listener"): the sockets bind side by side
 * (SO_REUSEPORT), and the kernel spread the connections between two configs.
 */
export function duplicateAddresses(
  listeners: ReadonlyArray<{ name: string; config: JsonObject }>,
): Array<{ index: number; name: string; address: string; first: string }> {
  const holders = new Map<string, string>();
  const out: Array<{ index: number; name: string; address: string; first: string }> = [];
  listeners.forEach(({ name, config }, index) => {
    const address = boundAddress(config);
    if (address === null) return;
    const first = holders.get(address);
    if (first === undefined) holders.set(address, name);
    else out.push({ index, name, address, first });
  });
  return out;
}

/** The finding for one duplicate, in the reference's words. */
export const duplicateAddressMessage = (d: { name: string; address: string; first: string }): string =>
  `listener '${d.name}' has duplicate address '${d.address}' as existing listener '${d.first}'`;
