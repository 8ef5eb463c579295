import type { Connection } from './connection.js';
import { DEFAULT_MAX_FRAME, ERROR, FLAG, MAX_WINDOW, SETTING, TYPE } from './frames.js';
import type { Keepalive } from './keepalive.js';

/*
 * The frames that act on the connection rather than carry a request (RFC 9113 6.3-6.9), as
 * the session's reader hands them over: each checks its frame and answers or raises the error.
 */

export function priority(s: Connection, b: Buffer, p: number, length: number, id: number): void {
  if (id === 0) {
    s.connectionError(ERROR.PROTOCOL_ERROR);
    return;
  }
  if (length !== 5) {
    const stream = s.streams.get(id);
    if (stream) s.reset(stream, ERROR.FRAME_SIZE_ERROR);
    else s.resetId(id, ERROR.FRAME_SIZE_ERROR);
    return;
  }
  const flood = s.flood.priority();
  if (flood !== null) {
    s.connectionError(ERROR.ENHANCE_YOUR_CALM, flood);
    return;
  }
  // Priorities are parsed and ignored (RFC 9113 5.3.2), save a stream depending on itself.
  if ((b.readUInt32BE(p) & 0x7fffffff) === id) {
    const stream = s.streams.get(id);
    if (stream) s.reset(stream, ERROR.PROTOCOL_ERROR);
    else s.resetId(id, ERROR.PROTOCOL_ERROR);
  }
}

export function rstStream(s: Connection, b: Buffer, p: number, length: number, id: number): void {
  if (id === 0) {
    s.connectionError(ERROR.PROTOCOL_ERROR);
    return;
  }
  if (length !== 4) {
    s.connectionError(ERROR.FRAME_SIZE_ERROR);
    return;
  }
  if (s.idle(id)) {
    s.connectionError(ERROR.PROTOCOL_ERROR);
    return;
  }
  const stream = s.streams.get(id);
  if (stream !== undefined) s.peerReset(stream, b.readUInt32BE(p));
}

export function settings(
  s: Connection,
  b: Buffer,
  p: number,
  length: number,
  flags: number,
  id: number,
): void {
  if (id !== 0) {
    s.connectionError(ERROR.PROTOCOL_ERROR);
    return;
  }
  if (flags & FLAG.ACK) {
    if (length !== 0) {
      s.connectionError(ERROR.FRAME_SIZE_ERROR);
      return;
    }
    s.settingsAcked = true;
    return;
  }
  if (length % 6 !== 0) {
    s.connectionError(ERROR.FRAME_SIZE_ERROR);
    return;
  }
  for (let at = p; at < p + length; at += 6) {
    const value = b.readUInt32BE(at + 2);
    switch (b.readUInt16BE(at)) {
      case SETTING.HEADER_TABLE_SIZE:
        s.encoder.setLimit(value);
        break;
      case SETTING.ENABLE_PUSH:
        if (value > 1) {
          s.connectionError(ERROR.PROTOCOL_ERROR);
          return;
        }
        break;
      case SETTING.INITIAL_WINDOW_SIZE:
        if (value > MAX_WINDOW) {
          s.connectionError(ERROR.FLOW_CONTROL_ERROR);
          return;
        }
        if (!initialWindow(s, value)) return;
        break;
      case SETTING.MAX_CONCURRENT_STREAMS:
        s.peerMaxStreams = value;
        break;
      case SETTING.MAX_FRAME_SIZE:
        if (value < DEFAULT_MAX_FRAME || value > 0xffffff) {
          s.connectionError(ERROR.PROTOCOL_ERROR);
          return;
        }
        s.peerMaxFrame = value;
        break;
      default:
    }
  }
  if (!s.queued(true)) return;
  s.writer.header(0, TYPE.SETTINGS, FLAG.ACK, 0);
  s.markDirty();
}

/** A new SETTINGS_INITIAL_WINDOW_SIZE moves every open stream's window by the difference (RFC 9113 6.9.2). */
function initialWindow(s: Connection, value: number): boolean {
  const delta = value - s.peerInitialWindow;
  s.peerInitialWindow = value;
  for (const stream of s.streams.values()) {
    stream.sendWindow += delta;
    if (stream.sendWindow > MAX_WINDOW) {
      s.connectionError(ERROR.FLOW_CONTROL_ERROR);
      return false;
    }
    if (delta > 0 && stream.outBytes > 0) s.ready(stream);
  }
  return true;
}

export function ping(
  s: Connection,
  b: Buffer,
  p: number,
  length: number,
  flags: number,
  id: number,
  keepalive: Keepalive | null,
): void {
  if (id !== 0) {
    s.connectionError(ERROR.PROTOCOL_ERROR);
    return;
  }
  if (length !== 8) {
    s.connectionError(ERROR.FRAME_SIZE_ERROR);
    return;
  }
  // An ACK answers a PING of ours (connection_keepalive's); RFC 9113 6.7 wants no reply to one.
  if (flags & FLAG.ACK) {
    keepalive?.ack(b.subarray(p, p + 8));
    return;
  }
  if (!s.queued(true)) return;
  s.writer.header(8, TYPE.PING, FLAG.ACK, 0);
  s.writer.bytes(b, p, p + 8);
  s.markDirty();
}

export function windowUpdate(s: Connection, b: Buffer, p: number, length: number, id: number): void {
  if (length !== 4) {
    s.connectionError(ERROR.FRAME_SIZE_ERROR);
    return;
  }
  const flood = s.flood.windowUpdate();
  if (flood !== null) {
    s.connectionError(ERROR.ENHANCE_YOUR_CALM, flood);
    return;
  }
  const increment = b.readUInt32BE(p) & 0x7fffffff;
  if (id === 0) {
    if (increment === 0) {
      s.connectionError(ERROR.PROTOCOL_ERROR);
      return;
    }
    s.sendWindow += increment;
    if (s.sendWindow > MAX_WINDOW) {
      s.connectionError(ERROR.FLOW_CONTROL_ERROR);
      return;
    }
    for (const stream of s.streams.values()) if (stream.outBytes > 0) s.ready(stream);
    return;
  }
  const stream = s.streams.get(id);
  if (stream === undefined) {
    if (s.idle(id)) s.connectionError(ERROR.PROTOCOL_ERROR);
    return;
  }
  if (increment === 0) {
    s.reset(stream, ERROR.PROTOCOL_ERROR);
    return;
  }
  stream.sendWindow += increment;
  if (stream.sendWindow > MAX_WINDOW) {
    s.reset(stream, ERROR.FLOW_CONTROL_ERROR);
    return;
  }
  if (stream.outBytes > 0 || (stream.localEnded && !stream.endSent)) s.ready(stream);
}
