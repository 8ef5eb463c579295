/**
 * What a restarted recorder needs from an existing event log before it appends to it: the
 * last sequence number written (the new run numbers on from it, so the file stays one
 * ascending sequence that replays whole) and where the last complete line ends (a line torn
 * by a crash is cut off, or the next header would be glued to it).
 */
import { closeSync, fstatSync, readSync } from 'node:fs';
import { openLogFile } from './log-file.js';
import { parseLogLine } from './log-format.js';

export interface LogTail {
  /** Sequence number of the last envelope or checkpoint; 0 when there is none. */
  lastSeq: number;
  /** Bytes up to and including the last newline; the file's size when it ends in one. */
  completeBytes: number;
  size: number;
}

const CHUNK = 1 << 16;

/**
 * Reads `path` backwards until it finds the last line with a sequence number: only the
 * lines after it are read, however long the file. Null when the file does not exist.
 */
export function readLogTail(path: string): LogTail | null {
  let fd: number;
  try {
    fd = openLogFile(path, 'read');
  } catch (err) {
    if ((err as NodeJS.ErrnoException).code === 'ENOENT') return null;
    throw err;
  }
  try {
    const size = fstatSync(fd).size;
    const completeBytes = endOfLastLine(fd, size);
    for (const line of linesBackwards(fd, completeBytes)) {
      const seq = seqOf(line);
      if (seq !== null) return { lastSeq: seq, completeBytes, size };
    }
    return { lastSeq: 0, completeBytes, size };
  } finally {
    closeSync(fd);
  }
}

function readAt(fd: number, start: number, end: number): Buffer {
  const chunk = Buffer.alloc(end - start);
  readSync(fd, chunk, 0, chunk.length, start);
  return chunk;
}

/** The offset just after the last newline of the file's first `size` bytes (0 without one). */
function endOfLastLine(fd: number, size: number): number {
  for (let end = size; end > 0; ) {
    const start = Math.max(0, end - CHUNK);
    const nl = readAt(fd, start, end).lastIndexOf(0x0a);
    if (nl >= 0) return start + nl + 1;
    end = start;
  }
  return 0;
}

/** The lines of the first `end` bytes (which end in a newline), last first, without newlines. */
function* linesBackwards(fd: number, end: number): Generator<string> {
  let pos = end;
  // The bytes [pos, pos + buf.length): whole lines, each with its newline.
  let buf = Buffer.alloc(0);
  for (;;) {
    const nl = buf.length >= 2 ? buf.lastIndexOf(0x0a, buf.length - 2) : -1;
    if (nl >= 0) {
      yield buf.toString('utf8', nl + 1, buf.length - 1);
      buf = buf.subarray(0, nl + 1);
    } else if (pos > 0) {
      const start = Math.max(0, pos - CHUNK);
      buf = Buffer.concat([readAt(fd, start, pos), buf]);
      pos = start;
    } else {
      if (buf.length > 0) yield buf.toString('utf8', 0, buf.length - 1);
      return;
    }
  }
}

function seqOf(line: string): number | null {
  if (line.trim() === '') return null;
  const parsed = parseLogLine(line);
  if (typeof parsed === 'string' || parsed.kind === 'header') return null;
  return parsed.kind === 'envelope' ? parsed.envelope.seq : parsed.checkpoint.seq;
}
