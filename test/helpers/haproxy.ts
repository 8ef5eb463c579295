/** HAProxy (Debian's package) as a differential peer, run in the foreground on one config. */
import { spawnSync } from 'node:child_process';
import { mkdtempSync, readFileSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { freePort } from './free-port.js';
import { daemon } from './nginx.js';

/** Whether haproxy is installed (scripts/install-system-deps.sh installs it). */
export const hasHaproxy = spawnSync('haproxy', ['-v']).error === undefined;

export const NO_HAPROXY = 'haproxy is not installed (scripts/install-system-deps.sh installs it)';

export interface Haproxy {
  port: number;
  stop(): void;
}

/** Starts HAProxy with an h2c (prior knowledge) frontend on a free port, proxying to `upstreamPort` over HTTP/1.1. */
export function startH2cHaproxy(upstreamPort: number): Promise<Haproxy> {
  return startHaproxy(upstreamPort, 'proto h2');
}

/**
 * Starts HAProxy in HTTP mode on a free port (`bindFlags` on its `bind` line; none: HTTP/1),
 * proxying to `upstreamPort` over HTTP/1.1.
 */
export async function startHaproxy(upstreamPort: number, bindFlags = ''): Promise<Haproxy> {
  const dir = mkdtempSync(join(tmpdir(), 'haproxy-'));
  const port = await freePort();
  const config = join(dir, 'haproxy.cfg');
  writeFileSync(
    config,
    `global
  maxconn 100

defaults
  mode http
  timeout connect 5s
  timeout client 10s
  timeout server 10s

frontend front
  bind 127.0.0.1:${port}${bindFlags ? ` ${bindFlags}` : ''}
  default_backend origin

backend origin
  server origin 127.0.0.1:${upstreamPort}
`,
  );
  return daemon('haproxy', ['-db', '-f', config], dir, port);
}

/** The certificate a TLS terminator presents, and the CA whose client certificates it requires (mTLS). */
export interface TerminatorTls {
  cert: string;
  key: string;
  /** Client certificates must be signed by this CA (a file); none: no client certificate asked. */
  clientCa?: string;
  /** The protocol ALPN selects: `h2` (gRPC, the default) or `http/1.1` (REST). */
  alpn?: string;
}

/**
 * Starts HAProxy as a TLS terminator in front of a plain-text HTTP/2 server (a gRPC management
 * server, or a REST one): TCP mode, ALPN `h2` (or `tls.alpn`), and `strict-sni`, so a handshake whose SNI names no name of the
 * certificate is refused. Idle streams stay up for an hour.
 */
export async function startTlsTerminator(upstreamPort: number, tls: TerminatorTls): Promise<Haproxy> {
  const dir = mkdtempSync(join(tmpdir(), 'haproxy-tls-'));
  const port = await freePort();
  const pem = join(dir, 'server.pem');
  writeFileSync(pem, readFileSync(tls.cert, 'utf8') + readFileSync(tls.key, 'utf8'));
  const verify = tls.clientCa ? ` ca-file ${tls.clientCa} verify required` : '';
  const config = join(dir, 'haproxy.cfg');
  writeFileSync(
    config,
    `global
  maxconn 100

defaults
  mode tcp
  timeout connect 5s
  timeout client 1h
  timeout server 1h

frontend front
  bind 127.0.0.1:${port} ssl crt ${pem} strict-sni alpn ${tls.alpn ?? 'h2'}${verify}
  default_backend origin

backend origin
  server origin 127.0.0.1:${upstreamPort}
`,
  );
  return daemon('haproxy', ['-db', '-f', config], dir, port);
}
