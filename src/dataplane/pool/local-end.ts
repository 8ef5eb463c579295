import type * as net from 'node:net';
import { joinHostPort } from '../access-log/stream-info.js';

/** Each upstream connection's local `ip:port`, asked of the kernel once per connection, not per request. */
const known = new WeakMap<net.Socket, string>();

/** `ip:port` of the local end of an upstream connection (`%UPSTREAM_LOCAL_ADDRESS%`); '' over a unix socket. */
export function localEnd(socket: net.Socket): string {
  let local = known.get(socket);
  if (local === undefined) {
    local = joinHostPort(socket.localAddress, socket.localPort);
    // Not kept before the connect: the kernel has not picked the address yet.
    if (local !== '' || socket.readyState === 'open') known.set(socket, local);
  }
  return local;
}
