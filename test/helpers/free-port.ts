import * as net from 'node:net';

/**
 * A loopback port nothing listens on now, for a peer that takes its port from the command line
 * only (a database, Prometheus, nginx) or a restarted epoch that must bind the same port again.
 */
export async function freePort(): Promise<number> {
  const server = net.createServer();
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  const { port } = server.address() as net.AddressInfo;
  await new Promise((resolve) => server.close(resolve));
  return port;
}
