/**
 * The Postgres frontend/backend protocol 3.0, read from both directions of one connection for
 * the reference's `postgres.<stat_prefix>.*` counters: messages, logins, statements,
 * transactions, errors and notices. It only watches (the TCP proxy carries the bytes), so a
 * stream it cannot read (SSL, a malformed frame, an old protocol) just stops being counted.
 */

import { LengthPrefixedFrames } from '../length-prefixed-frames.js';

/** Every counter the decoder moves, by its name under `postgres.<stat_prefix>.`. */
export const POSTGRES_STATS = [
  'sessions',
  'sessions_encrypted',
  'sessions_unencrypted',
  'messages',
  'messages_frontend',
  'messages_backend',
  'messages_unknown',
  'statements',
  'statements_insert',
  'statements_delete',
  'statements_update',
  'statements_select',
  'statements_other',
  'transactions',
  'transactions_commit',
  'transactions_rollback',
  'errors',
  'errors_error',
  'errors_fatal',
  'errors_panic',
  'errors_unknown',
  'notices',
  'notices_notice',
  'notices_log',
  'notices_warning',
  'notices_debug',
  'notices_info',
  'notices_unknown',
] as const;

export type PostgresStat = (typeof POSTGRES_STATS)[number];

const PROTOCOL_3 = 196608;
const SSL_REQUEST = 80877103;
const GSSENC_REQUEST = 80877104;
/** The server's own bound on a startup message (MAX_STARTUP_PACKET_LENGTH). */
const MAX_STARTUP = 10_000;

/** Message types each side may send (protocol 3.0); any other counts as `messages_unknown`. */
const FRONTEND_TYPES = new Set('QPBEDCHSXFpdcf');
const BACKEND_TYPES = new Set('RKSZTDCENI123nstAGHWcdVv');

/** The backend messages whose bodies are read; bodies of the rest are skipped unread. */
const READ_BODIES = new Set('RCEN');
/** A body longer than this is skipped unread (no statement tag or severity is that long). */
const MAX_READ_BODY = 64 * 1024;

const STATEMENTS: Record<string, PostgresStat> = {
  INSERT: 'statements_insert',
  DELETE: 'statements_delete',
  UPDATE: 'statements_update',
  SELECT: 'statements_select',
};
const ERRORS: Record<string, PostgresStat> = {
  ERROR: 'errors_error',
  FATAL: 'errors_fatal',
  PANIC: 'errors_panic',
};
const NOTICES: Record<string, PostgresStat> = {
  NOTICE: 'notices_notice',
  LOG: 'notices_log',
  WARNING: 'notices_warning',
  DEBUG: 'notices_debug',
  INFO: 'notices_info',
};

/** Whether a backend message's body is read: one of READ_BODIES, no longer than MAX_READ_BODY. */
const readsBody = (type: string, length: number): boolean => READ_BODIES.has(type) && length <= MAX_READ_BODY;

const typeOf = (header: Buffer): string => String.fromCharCode(header[0] as number);

/**
 * One direction's framing: `type(1) length(4) body`, the length counting itself (below 4 the
 * stream is unreadable). `onMessage` gets the body when `readsBody`, else null.
 */
function framer(onMessage: (type: string, body: Buffer | null) => boolean): LengthPrefixedFrames {
  return new LengthPrefixedFrames({
    headerLength: 5,
    bodyLength: (header) => {
      const length = header.readUInt32BE(1);
      return length < 4 ? -1 : length - 4;
    },
    keep: (header, length) => (readsBody(typeOf(header), length) ? length : 0),
    onFrame: (header, kept, length) => {
      const type = typeOf(header);
      return onMessage(type, readsBody(type, length) ? kept : null);
    },
  });
}

/** The severity of an ErrorResponse or NoticeResponse body: its `V` field, else its `S`. */
function severity(body: Buffer): string {
  let localized = '';
  let at = 0;
  while (at < body.length && body[at] !== 0) {
    const code = String.fromCharCode(body[at] as number);
    const end = body.indexOf(0, at + 1);
    if (end < 0) break;
    const value = body.toString('latin1', at + 1, end);
    if (code === 'V') return value;
    if (code === 'S') localized = value;
    at = end + 1;
  }
  return localized;
}

/** One connection's decoder: `client` (the frontend) and `server` (the backend) take each side's bytes as they pass. */
export class PostgresDecoder {
  /** What the frontend sends next: its untyped first message, typed ones, or nothing more to read. */
  private frontendState: 'startup' | 'typed' | 'done' = 'startup';
  /** The backend answers an SSL or GSS request with one byte before anything else. */
  private awaitingEncryptionAnswer = false;
  private backendStarted = false;
  private startup = Buffer.alloc(0);
  private inTransaction = false;
  private readonly frontendFrames = framer((type) => {
    this.count('messages', 'messages_frontend');
    if (!FRONTEND_TYPES.has(type)) this.count('messages_unknown');
    return true;
  });
  private readonly backendFrames = framer((type, body) => this.backendMessage(type, body));

  constructor(private readonly countOne: (stat: PostgresStat) => void) {}

  private count(...stats: PostgresStat[]): void {
    for (const s of stats) this.countOne(s);
  }

  client(chunk: Buffer): void {
    if (this.frontendState === 'done') return;
    if (this.frontendState === 'typed') {
      if (!this.frontendFrames.feed(chunk)) this.frontendState = 'done';
      return;
    }
    this.startup = Buffer.concat([this.startup, chunk]);
    if (this.startup.length < 8) return;
    const length = this.startup.readUInt32BE(0);
    if (length < 8 || length > MAX_STARTUP) {
      this.frontendState = 'done';
      this.startup = Buffer.alloc(0);
      return;
    }
    if (this.startup.length < length) return;
    const code = this.startup.readUInt32BE(4);
    const rest = this.startup.subarray(length);
    this.startup = Buffer.alloc(0);
    if (code === SSL_REQUEST || code === GSSENC_REQUEST) {
      this.awaitingEncryptionAnswer = true;
      // The client waits for the answer: nothing more comes from it before then.
      return;
    }
    if (code !== PROTOCOL_3) {
      // A cancel request or a protocol before 3.0: nothing this decoder reads follows.
      this.frontendState = 'done';
      return;
    }
    this.count('messages', 'messages_frontend');
    this.frontendState = 'typed';
    this.backendStarted = true;
    if (rest.length > 0) this.client(rest);
  }

  server(chunk: Buffer): void {
    let data = chunk;
    if (this.awaitingEncryptionAnswer && data.length > 0) {
      this.awaitingEncryptionAnswer = false;
      const answer = String.fromCharCode(data[0] as number);
      if (answer === 'S' || answer === 'G') {
        // Encrypted from here on: the reference stops decoding too.
        this.count('sessions', 'sessions_encrypted');
        this.frontendState = 'done';
        this.backendStarted = false;
        return;
      }
      data = data.subarray(1);
    }
    if (!this.backendStarted || data.length === 0) return;
    if (!this.backendFrames.feed(data)) this.backendStarted = false;
  }

  private backendMessage(type: string, body: Buffer | null): boolean {
    this.count('messages', 'messages_backend');
    if (!BACKEND_TYPES.has(type)) this.count('messages_unknown');
    if (body === null) return true;
    if (type === 'R') {
      // AuthenticationOk: the login succeeded.
      if (body.length >= 4 && body.readUInt32BE(0) === 0) this.count('sessions', 'sessions_unencrypted');
    } else if (type === 'C') {
      this.commandComplete(body.toString('latin1', 0, Math.max(0, body.indexOf(0))));
    } else if (type === 'E') {
      this.count('errors', ERRORS[severity(body)] ?? 'errors_unknown');
    } else if (type === 'N') {
      this.count('notices', NOTICES[severity(body)] ?? 'notices_unknown');
    }
    return true;
  }

  /** A CommandComplete's tag (`INSERT 0 1`, `COMMIT`, ...): a statement, or a transaction's end. */
  private commandComplete(tag: string): void {
    const verb = tag.split(' ', 1)[0] ?? '';
    if (verb === 'BEGIN' || verb === 'START') {
      this.inTransaction = true;
    } else if (verb === 'COMMIT' || verb === 'ROLLBACK') {
      this.inTransaction = false;
      this.count('transactions', verb === 'COMMIT' ? 'transactions_commit' : 'transactions_rollback');
    } else {
      this.count('statements', STATEMENTS[verb] ?? 'statements_other');
      // Outside BEGIN ... COMMIT each statement is its own transaction, committed.
      if (!this.inTransaction) this.count('transactions', 'transactions_commit');
    }
  }
}
