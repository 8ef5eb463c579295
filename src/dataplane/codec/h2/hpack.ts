import {
  DynamicTable,
  ENTRY_OVERHEAD,
  STATIC_COUNT,
  STATIC_FIELD_INDEX,
  STATIC_NAME_INDEX,
  STATIC_NAMES,
  STATIC_VALUES,
} from './hpack-table.js';
import { huffmanDecode, huffmanEncode, huffmanLength } from './huffman.js';

const EMPTY = Buffer.alloc(0);

/** Why a header block failed to decode: a connection error of type COMPRESSION_ERROR. */
export class HpackError extends Error {}

/**
 * Decodes header blocks (RFC 7541) into flat `[name, value, ...]` lists of Latin-1 strings,
 * keeping the dynamic table the peer's encoder shares with it.
 */
export class HpackDecoder {
  private readonly table: DynamicTable;
  /** The limit the peer's table size updates must keep to: our SETTINGS_HEADER_TABLE_SIZE. */
  private readonly limit: number;
  private at = 0;
  private bytes: Buffer = EMPTY;
  private end = 0;
  /** The decoded list's size as SETTINGS_MAX_HEADER_LIST_SIZE counts it (RFC 9113 6.5.2). */
  listSize = 0;
  /** Fields past this list size are counted but not kept (see `decode`). */
  private keepUpTo = 0;

  constructor(tableSize: number) {
    this.table = new DynamicTable(tableSize);
    this.limit = tableSize;
  }

  /**
   * Appends the fields of `block[start, end)` to `out` while the list is within `maxListSize`,
   * then only counts them in `listSize`; throws HpackError on a malformed block. The bound
   * holds while decoding because one byte can name a table entry of 4 KB: a 256 KiB block
   * decodes to a gigabyte of fields.
   */
  decode(block: Buffer, start: number, end: number, out: string[], maxListSize: number): void {
    this.bytes = block;
    this.at = start;
    this.end = end;
    this.listSize = 0;
    this.keepUpTo = maxListSize;
    let fields = false;
    while (this.at < end) {
      const byte = block[this.at] as number;
      if (byte & 0x80) {
        const index = this.integer(7);
        if (index === 0) throw new HpackError('indexed field with index 0');
        this.push(out, this.nameAt(index), this.valueAt(index));
      } else if (byte & 0x40) {
        const index = this.integer(6);
        const name = index === 0 ? this.string() : this.nameAt(index);
        const value = this.string();
        this.table.add(name, value);
        this.push(out, name, value);
      } else if (byte & 0x20) {
        // RFC 7541 4.2: size updates come first in a block, within the advertised limit.
        if (fields) throw new HpackError('dynamic table size update after a field');
        const size = this.integer(5);
        if (size > this.limit) throw new HpackError(`table size update to ${size} over ${this.limit}`);
        this.table.resize(size);
        continue;
      } else {
        const index = this.integer(4);
        const name = index === 0 ? this.string() : this.nameAt(index);
        this.push(out, name, this.string());
      }
      fields = true;
    }
    this.bytes = EMPTY;
  }

  private push(out: string[], name: string, value: string): void {
    this.listSize += name.length + value.length + ENTRY_OVERHEAD;
    if (this.listSize <= this.keepUpTo) out.push(name, value);
  }

  private nameAt(index: number): string {
    if (index <= STATIC_COUNT) return STATIC_NAMES[index - 1] as string;
    const i = index - STATIC_COUNT - 1;
    if (i >= this.table.count) throw new HpackError(`index ${index} beyond the tables`);
    return this.table.name(i);
  }

  private valueAt(index: number): string {
    if (index <= STATIC_COUNT) return STATIC_VALUES[index - 1] as string;
    return this.table.value(index - STATIC_COUNT - 1);
  }

  /** An integer with an N-bit prefix (RFC 7541 5.1), at most 2^31 - 1. */
  private integer(prefixBits: number): number {
    const max = (1 << prefixBits) - 1;
    let value = (this.bytes[this.at++] as number) & max;
    if (value < max) return value;
    let shift = 0;
    for (;;) {
      if (this.at >= this.end) throw new HpackError('truncated integer');
      const byte = this.bytes[this.at++] as number;
      value += (byte & 0x7f) * 2 ** shift;
      shift += 7;
      if (value > 0x7fffffff) throw new HpackError('integer overflow');
      if ((byte & 0x80) === 0) return value;
    }
  }

  /** A string literal (RFC 7541 5.2), Huffman-coded or raw. */
  private string(): string {
    if (this.at >= this.end) throw new HpackError('truncated string');
    const huffman = ((this.bytes[this.at] as number) & 0x80) !== 0;
    const length = this.integer(7);
    const start = this.at;
    if (length > this.end - start) throw new HpackError('string beyond the block');
    this.at += length;
    if (!huffman) return this.bytes.toString('latin1', start, this.at);
    const decoded = huffmanDecode(this.bytes, start, this.at);
    if (decoded === null) throw new HpackError('invalid Huffman string');
    return decoded;
  }
}

/**
 * Fields the encoder never adds to the table: secrets (RFC 7541 7.1.3) and values that change
 * each time, as nghttp2 leaves out `age`, `etag`, `if-modified-since`, `if-none-match` and
 * `location` (not `:path`, which a gRPC client repeats in every call). A request id or trace
 * id is new in every request: indexed, each evicted the fields that do repeat (a 4 KiB table
 * holds ~50 of them), which were then coded and added again, and every 1,024 additions the
 * encoder swept its lookups.
 */
const NOT_INDEXED = new Set([
  'set-cookie',
  'authorization',
  'cookie',
  'content-length',
  'date',
  'etag',
  'age',
  'if-modified-since',
  'if-none-match',
  'location',
  'x-request-id',
  'traceparent',
  'x-b3-traceid',
  'x-b3-spanid',
  'x-b3-parentspanid',
  'x-amzn-trace-id',
]);

/** An entry larger than this stays out of the table: it would evict many small, repeated ones. */
const INDEX_MAX_ENTRY = 512;

/**
 * Encodes response header blocks. Repeated fields (`server`, `content-type`, a status) are
 * added to the dynamic table and sent as one index afterwards; literals are Huffman-coded when
 * that is shorter.
 */
export class HpackEncoder {
  private readonly table = new DynamicTable(4096);
  /**
   * Name, then value, to the `inserted` count of the entry holding them (two lookups rather
   * than one of a `name + value` string made for each field), and name alone to the last.
   */
  private readonly fields = new Map<string, Map<string, number>>();
  private fieldCount = 0;
  private readonly names = new Map<string, number>();
  /** A size update owed at the start of the next block (the peer lowered its limit), or -1. */
  private pendingSize = -1;
  /** The smallest size since the last block: signalled first when the limit fell and rose again. */
  private smallestSize = 0;

  /** The peer's SETTINGS_HEADER_TABLE_SIZE: the table never grows beyond 4096 whatever it allows. */
  setLimit(limit: number): void {
    const size = Math.min(limit, 4096);
    if (size === this.table.maxSize) return;
    this.table.resize(size);
    this.smallestSize = this.pendingSize < 0 ? size : Math.min(this.smallestSize, size);
    this.pendingSize = size;
  }

  /** The most bytes `encode` may write for these fields (and a `content-length` of its own). */
  static bound(status: string, headers: readonly string[]): number {
    let n = 48 + status.length;
    for (let i = 0; i < headers.length; i++) n += (headers[i] as string).length + 6;
    return n;
  }

  /**
   * Writes `:status` then `headers` (flat, lowercase names) at `out[at]`; returns the offset
   * after them. A `contentLength` of 0 or more is sent as `content-length` in place of any the
   * list has: the caller need not copy the list to replace it.
   */
  encode(
    status: string | null,
    headers: readonly string[],
    out: Buffer,
    at: number,
    contentLength = -1,
  ): number {
    if (this.pendingSize >= 0) {
      if (this.smallestSize < this.pendingSize) at = integer(this.smallestSize, 5, 0x20, out, at);
      at = integer(this.pendingSize, 5, 0x20, out, at);
      this.pendingSize = -1;
    }
    if (status !== null) at = this.field(':status', status, out, at);
    const length = contentLength >= 0;
    for (let i = 0; i < headers.length; i += 2) {
      const name = headers[i] as string;
      if (length && name === 'content-length') continue;
      at = this.field(name, headers[i + 1] as string, out, at);
    }
    if (length) at = this.field('content-length', String(contentLength), out, at);
    return at;
  }

  private field(name: string, value: string, out: Buffer, at: number): number {
    const values = this.fields.get(name);
    const exact = STATIC_FIELD_INDEX.get(name)?.get(value) ?? this.dynamicIndex(values?.get(value));
    if (exact > 0) return integer(exact, 7, 0x80, out, at);
    const nameIndex = STATIC_NAME_INDEX.get(name) ?? this.dynamicIndex(this.names.get(name));
    const size = name.length + value.length + ENTRY_OVERHEAD;
    const indexed = !NOT_INDEXED.has(name) && size <= INDEX_MAX_ENTRY && size <= this.table.maxSize;
    if (indexed) at = integer(nameIndex, 6, 0x40, out, at);
    else at = integer(nameIndex, 4, 0, out, at);
    if (nameIndex === 0) at = literal(name, out, at);
    at = literal(value, out, at);
    if (indexed) {
      this.table.add(name, value);
      if (values === undefined) this.fields.set(name, new Map([[value, this.table.inserted]]));
      else values.set(value, this.table.inserted);
      this.names.set(name, this.table.inserted);
      if (++this.fieldCount > 1024) this.forgetEvicted();
    }
    return at;
  }

  /** The HPACK index of the entry added as the `inserted`-th, or 0 when it is gone. */
  private dynamicIndex(inserted: number | undefined): number {
    if (inserted === undefined) return 0;
    const age = this.table.inserted - inserted;
    return age < this.table.count ? STATIC_COUNT + 1 + age : 0;
  }

  /** Drops lookups of evicted entries, so the maps stay as small as the table. */
  private forgetEvicted(): void {
    this.fieldCount = 0;
    for (const [name, values] of this.fields) {
      for (const [value, inserted] of values)
        if (this.dynamicIndex(inserted) === 0) values.delete(value);
        else this.fieldCount += 1;
      if (values.size === 0) this.fields.delete(name);
    }
    for (const [name, inserted] of this.names) if (this.dynamicIndex(inserted) === 0) this.names.delete(name);
  }
}

/** Writes an integer with an N-bit prefix under `first`'s high bits (RFC 7541 5.1). */
function integer(value: number, prefixBits: number, first: number, out: Buffer, at: number): number {
  const max = (1 << prefixBits) - 1;
  if (value < max) {
    out[at++] = first | value;
    return at;
  }
  out[at++] = first | max;
  let rest = value - max;
  while (rest >= 128) {
    out[at++] = (rest & 0x7f) | 0x80;
    rest >>>= 7;
  }
  out[at++] = rest;
  return at;
}

/** A string literal, Huffman-coded when shorter. */
function literal(value: string, out: Buffer, at: number): number {
  const coded = value.length > 4 ? huffmanLength(value) : value.length;
  if (coded < value.length) {
    at = integer(coded, 7, 0x80, out, at);
    return huffmanEncode(value, out, at);
  }
  at = integer(value.length, 7, 0, out, at);
  return at + out.write(value, at, 'latin1');
}
