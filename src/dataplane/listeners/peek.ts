import type * as net from 'node:net';
import type { ListenerSpec } from '../../config/listener.js';
import { ClientHelloReader } from '../../tls/client-hello.js';
import { guardedData } from '../codec/peer-guard.js';
import { sniffHttp } from './http-sniff.js';

/** What a peek found: the facts a filter chain may match on. */
export type Peeked = (transportProtocol: string, serverName: string, alpn: string[]) => void;

/**
 * Reads the first bytes until they show a whole ClientHello or plain text, as the
 * reference's TLS inspector (inserted by itself when a chain matches on what it finds), and
 * with the HTTP inspector a plain-text request's first line, then puts them back for whoever
 * reads the socket next and calls `peeked`.
 */
export function peekFirstBytes(
  socket: net.Socket,
  spec: Pick<ListenerSpec, 'inspectTimeoutMs' | 'continueOnInspectTimeout' | 'httpInspector'>,
  peeked: Peeked,
): void {
  const reader = new ClientHelloReader();
  const chunks: Buffer[] = [];
  const settle = (transportProtocol: string, serverName: string, alpn: string[]) => {
    if (timer) clearTimeout(timer);
    socket.off('data', onData);
    socket.off('close', onClose);
    socket.off('end', onEnd);
    socket.pause();
    socket.unshift(Buffer.concat(chunks));
    peeked(transportProtocol, serverName, alpn);
  };
  const ms = spec.inspectTimeoutMs;
  const timer =
    ms > 0
      ? setTimeout(() => {
          if (spec.continueOnInspectTimeout) settle('raw_buffer', '', []);
          else socket.destroy();
        }, ms)
      : null;
  const onClose = () => {
    if (timer) clearTimeout(timer);
  };
  // Plain text, with the HTTP inspector: read on to the first line for its HTTP version.
  let sniffing = false;
  const sniff = () => {
    const found = sniffHttp(Buffer.concat(chunks));
    if (found.kind === 'done') settle('raw_buffer', '', found.protocols);
  };
  // Guarded here, not at `on`: `settle` takes this very function off again.
  const onData = guardedData(socket, 'listener filter', (chunk) => {
    chunks.push(chunk);
    if (sniffing) return sniff();
    const scan = reader.push(chunk);
    if (scan.kind === 'plain' && spec.httpInspector) {
      sniffing = true;
      sniff();
    } else if (scan.kind === 'plain') settle('raw_buffer', '', []);
    else if (scan.kind === 'tls') settle('tls', scan.serverName, scan.alpn);
  });
  // A peer that closes before its ClientHello (a TCP probe) has nothing to hand on.
  const onEnd = () => socket.destroy();
  socket.on('data', onData);
  socket.on('close', onClose);
  socket.on('end', onEnd);
  socket.on('error', () => {});
}
