/**
 * The MySQL client/server protocol, read from both directions of one connection for the
 * reference's `mysql.<stat_prefix>.*` counters: logins, their failures, SSL upgrades, auth
 * switches, and packets out of sequence or not decodable. It only watches (the TCP proxy
 * carries the bytes), so a stream it cannot read (SSL, a malformed greeting) stops being read.
 */

import { LengthPrefixedFrames } from '../length-prefixed-frames.js';

/** Every counter the decoder moves, by its name under `mysql.<stat_prefix>.`. */
export const MYSQL_STATS = [
  'sessions',
  'login_attempts',
  'login_failures',
  'upgraded_to_ssl',
  'auth_switch_request',
  'decoder_errors',
  'protocol_errors',
] as const;

export type MysqlStat = (typeof MYSQL_STATS)[number];

const PROTOCOL_V10 = 10;
const CLIENT_PROTOCOL_41 = 0x200;
const CLIENT_SSL = 0x800;
/** An SSLRequest is the handshake response's fixed part alone: capabilities, max packet, charset, filler. */
const SSL_REQUEST_LENGTH = 32;
const OK = 0x00;
const AUTH_MORE_DATA = 0x01;
const AUTH_SWITCH = 0xfe;
const ERR = 0xff;
/** The first bytes of a payload are all any state reads. */
const KEEP = 4;

/** One direction's packets: `length(3, little-endian) sequence(1) payload`. */
function packets(onPacket: (seq: number, length: number, first: Buffer) => void): LengthPrefixedFrames {
  return new LengthPrefixedFrames({
    headerLength: 4,
    bodyLength: (header) => header.readUIntLE(0, 3),
    keep: () => KEEP,
    onFrame(header, first, length) {
      onPacket(header[3] as number, length, first);
      return true;
    },
  });
}

type Phase = 'greeting' | 'login' | 'auth' | 'command' | 'done';

/** One connection's decoder: `client` and `server` take each side's bytes as they pass. */
export class MysqlDecoder {
  private phase: Phase = 'greeting';
  /** The sequence number the last packet either way carried; -1 before the first. */
  private lastSeq = -1;
  private readonly clientPackets = packets((seq, length, first) => this.clientPacket(seq, length, first));
  private readonly serverPackets = packets((seq, _length, first) => this.serverPacket(seq, first));

  constructor(private readonly count: (stat: MysqlStat) => void) {
    count('sessions');
  }

  client(chunk: Buffer): void {
    if (this.phase !== 'done') this.clientPackets.feed(chunk);
  }

  server(chunk: Buffer): void {
    if (this.phase !== 'done') this.serverPackets.feed(chunk);
  }

  /** Each packet's sequence follows the last one's; a client's command starts it at 0 again. */
  private inSequence(seq: number, commandStart: boolean): void {
    const expected = commandStart ? 0 : (this.lastSeq + 1) & 0xff;
    if (seq !== expected) this.count('protocol_errors');
    this.lastSeq = seq;
  }

  private serverPacket(seq: number, first: Buffer): void {
    if (this.phase === 'done') return;
    this.inSequence(seq, false);
    const kind = first[0];
    if (this.phase === 'greeting') {
      if (kind === PROTOCOL_V10) this.phase = 'login';
      else {
        // An error instead of a greeting (too many connections, a host refused) or another protocol.
        if (kind !== ERR) this.count('decoder_errors');
        this.phase = 'done';
      }
    } else if (this.phase === 'auth') {
      if (kind === OK) this.phase = 'command';
      else if (kind === ERR) {
        this.count('login_failures');
        this.phase = 'done';
      } else if (kind === AUTH_SWITCH) this.count('auth_switch_request');
      else if (kind !== AUTH_MORE_DATA) this.count('decoder_errors');
    }
  }

  private clientPacket(seq: number, length: number, first: Buffer): void {
    if (this.phase === 'done') return;
    if (this.phase === 'command') {
      this.inSequence(seq, seq === 0);
      return;
    }
    this.inSequence(seq, false);
    if (this.phase !== 'login') return;
    if (first.length < 2) {
      this.count('decoder_errors');
      this.phase = 'done';
      return;
    }
    this.count('login_attempts');
    const capabilities = first.readUInt16LE(0);
    if (capabilities & CLIENT_SSL && capabilities & CLIENT_PROTOCOL_41 && length === SSL_REQUEST_LENGTH) {
      // TLS from here on: the reference stops decoding too.
      this.count('upgraded_to_ssl');
      this.phase = 'done';
      return;
    }
    this.phase = 'auth';
  }
}
