import { FLAG, FRAME_HEADER, type FrameWriter, TYPE } from './frames.js';
import { HpackEncoder } from './hpack.js';

/** The frames a session composes from more than one value: SETTINGS, GOAWAY and header blocks. */

export function writeSettings(w: FrameWriter, settings: ReadonlyArray<[number, number]>): void {
  w.header(settings.length * 6, TYPE.SETTINGS, 0, 0);
  for (const [id, value] of settings) {
    const b = w.reserve(6);
    b.writeUInt16BE(id, w.pos);
    b.writeUInt32BE(value, w.pos + 2);
    w.advance(6);
  }
}

export function writeGoaway(w: FrameWriter, lastStreamId: number, code: number): void {
  w.header(8, TYPE.GOAWAY, 0, 0);
  const b = w.reserve(8);
  b.writeUInt32BE(lastStreamId, w.pos);
  b.writeUInt32BE(code, w.pos + 4);
  w.advance(8);
}

/**
 * A header block encoded in place after its frame header: one HEADERS frame, or when it is
 * larger than the peer's frame size, HEADERS then CONTINUATION frames (RFC 9113 4.3).
 * `contentLength` (0 or more) replaces the list's `content-length`, as `HpackEncoder.encode` says.
 */
export function writeHeaderBlock(
  w: FrameWriter,
  encoder: HpackEncoder,
  maxFrame: number,
  id: number,
  status: string | null,
  headers: readonly string[],
  end: boolean,
  contentLength = -1,
): void {
  const bound = HpackEncoder.bound(status ?? '', headers);
  const b = w.reserve(FRAME_HEADER + bound);
  const start = w.pos;
  const blockEnd = encoder.encode(status, headers, b, start + FRAME_HEADER, contentLength);
  const length = blockEnd - start - FRAME_HEADER;
  const flags = end ? FLAG.END_STREAM : 0;
  if (length <= maxFrame) {
    w.header(length, TYPE.HEADERS, flags | FLAG.END_HEADERS, id);
    w.advance(length);
    return;
  }
  const block = Buffer.from(b.subarray(start + FRAME_HEADER, blockEnd));
  for (let at = 0; at < length; at += maxFrame) {
    const n = Math.min(maxFrame, length - at);
    const lastPart = at + n === length ? FLAG.END_HEADERS : 0;
    w.header(n, at === 0 ? TYPE.HEADERS : TYPE.CONTINUATION, (at === 0 ? flags : 0) | lastPart, id);
    w.bytes(block, at, at + n);
  }
}
