/**
 * A small authoritative DNS server over UDP on 127.0.0.1 for tests: answers A and AAAA
 * queries from records the test sets (and may change at any time), NXDOMAIN for unknown
 * names, and counts the queries it saw per name and type.
 */
import { createSocket, type Socket } from 'node:dgram';
import dnsPacket from 'dns-packet';

export interface DnsRecords {
  A?: string[];
  AAAA?: string[];
  /** TTL of every record of the name, in seconds (default 30). */
  ttl?: number;
}

export class TestDnsServer {
  readonly queries = new Map<string, number>();
  private readonly records = new Map<string, DnsRecords>();

  private constructor(
    private readonly socket: Socket,
    readonly port: number,
  ) {
    socket.on('message', (message, peer) => this.answer(message, peer.port, peer.address));
  }

  /** Starts on an ephemeral port of 127.0.0.1. */
  static async start(): Promise<TestDnsServer> {
    const socket = createSocket('udp4');
    await new Promise<void>((resolve) => socket.bind(0, '127.0.0.1', resolve));
    return new TestDnsServer(socket, socket.address().port);
  }

  /** Replaces the records of `name`; null removes the name (NXDOMAIN). */
  set(name: string, records: DnsRecords | null): void {
    if (records === null) this.records.delete(name.toLowerCase());
    else this.records.set(name.toLowerCase(), records);
  }

  /** Queries seen for `name` of `type`. */
  count(name: string, type: 'A' | 'AAAA'): number {
    return this.queries.get(`${name.toLowerCase()} ${type}`) ?? 0;
  }

  async close(): Promise<void> {
    await new Promise<void>((resolve) => this.socket.close(() => resolve()));
  }

  private answer(message: Buffer, port: number, address: string): void {
    let query: dnsPacket.Packet;
    try {
      query = dnsPacket.decode(message);
    } catch {
      return;
    }
    const question = query.questions?.[0];
    if (!question) return;
    const name = question.name.toLowerCase();
    this.queries.set(`${name} ${question.type}`, (this.queries.get(`${name} ${question.type}`) ?? 0) + 1);
    const records = this.records.get(name);
    const type = question.type === 'A' || question.type === 'AAAA' ? question.type : null;
    const data = records && type ? (records[type] ?? []) : [];
    const response = dnsPacket.encode({
      type: 'response',
      id: query.id ?? 0,
      flags: dnsPacket.AUTHORITATIVE_ANSWER | (records ? 0 : 3), // rcode 3 = NXDOMAIN
      questions: [question],
      answers: data.map((ip) => ({ type: type!, name: question.name, ttl: records?.ttl ?? 30, data: ip })),
    });
    this.socket.send(response, port, address);
  }
}
