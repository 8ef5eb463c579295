/** HPACK's static table (RFC 7541 Appendix A), index 1 first: names, then values. */
const STATIC: Array<[string, string]> = [
  [':authority', ''],
  [':method', 'GET'],
  [':method', 'POST'],
  [':path', '/'],
  [':path', '/index.html'],
  [':scheme', 'http'],
  [':scheme', 'https'],
  [':status', '200'],
  [':status', '204'],
  [':status', '206'],
  [':status', '304'],
  [':status', '400'],
  [':status', '404'],
  [':status', '500'],
  ['accept-charset', ''],
  ['accept-encoding', 'gzip, deflate'],
  ['accept-language', ''],
  ['accept-ranges', ''],
  ['accept', ''],
  ['access-control-allow-origin', ''],
  ['age', ''],
  ['allow', ''],
  ['authorization', ''],
  ['cache-control', ''],
  ['content-disposition', ''],
  ['content-encoding', ''],
  ['content-language', ''],
  ['content-length', ''],
  ['content-location', ''],
  ['content-range', ''],
  ['content-type', ''],
  ['cookie', ''],
  ['date', ''],
  ['etag', ''],
  ['expect', ''],
  ['expires', ''],
  ['from', ''],
  ['host', ''],
  ['if-match', ''],
  ['if-modified-since', ''],
  ['if-none-match', ''],
  ['if-range', ''],
  ['if-unmodified-since', ''],
  ['last-modified', ''],
  ['link', ''],
  ['location', ''],
  ['max-forwards', ''],
  ['proxy-authenticate', ''],
  ['proxy-authorization', ''],
  ['range', ''],
  ['referer', ''],
  ['refresh', ''],
  ['retry-after', ''],
  ['server', ''],
  ['set-cookie', ''],
  ['strict-transport-security', ''],
  ['transfer-encoding', ''],
  ['user-agent', ''],
  ['vary', ''],
  ['via', ''],
  ['www-authenticate', ''],
];

export const STATIC_COUNT = STATIC.length;
export const STATIC_NAMES = STATIC.map(([name]) => name);
export const STATIC_VALUES = STATIC.map(([, value]) => value);

/** Each static name's first index, and each full static field's index by name, then value. */
export const STATIC_NAME_INDEX = new Map<string, number>();
export const STATIC_FIELD_INDEX = new Map<string, Map<string, number>>();
STATIC.forEach(([name, value], i) => {
  if (!STATIC_NAME_INDEX.has(name)) STATIC_NAME_INDEX.set(name, i + 1);
  if (value === '') return;
  const values = STATIC_FIELD_INDEX.get(name) ?? new Map<string, number>();
  values.set(value, i + 1);
  STATIC_FIELD_INDEX.set(name, values);
});

/** RFC 7541 4.1: an entry's size is its name and value lengths (octets) plus 32. */
export const ENTRY_OVERHEAD = 32;

/**
 * A dynamic table (RFC 7541 2.3.2): a ring of names and values, newest at index 0, evicting
 * the oldest while the size is over the maximum. Strings are Latin-1, so lengths are octets.
 */
export class DynamicTable {
  private names: string[] = new Array(16);
  private values: string[] = new Array(16);
  /** Ring slot of the newest entry. */
  private head = 0;
  count = 0;
  size = 0;
  /** Entries ever added: the encoder names entries by this to find them again. */
  inserted = 0;

  constructor(public maxSize: number) {}

  name(index: number): string {
    return this.names[this.slot(index)] as string;
  }

  value(index: number): string {
    return this.values[this.slot(index)] as string;
  }

  /** `index` 0 is the newest entry. */
  private slot(index: number): number {
    return (this.head + index) & (this.names.length - 1);
  }

  add(name: string, value: string): void {
    const size = name.length + value.length + ENTRY_OVERHEAD;
    this.inserted += 1;
    if (size > this.maxSize) {
      // RFC 7541 4.4: an entry larger than the table empties it and is not added.
      this.count = 0;
      this.size = 0;
      return;
    }
    this.evictTo(this.maxSize - size);
    if (this.count === this.names.length) this.grow();
    this.head = (this.head - 1) & (this.names.length - 1);
    this.names[this.head] = name;
    this.values[this.head] = value;
    this.count += 1;
    this.size += size;
  }

  resize(maxSize: number): void {
    this.maxSize = maxSize;
    this.evictTo(maxSize);
  }

  private evictTo(size: number): void {
    while (this.size > size && this.count > 0) {
      const last = this.slot(this.count - 1);
      this.size -=
        (this.names[last] as string).length + (this.values[last] as string).length + ENTRY_OVERHEAD;
      this.count -= 1;
    }
  }

  private grow(): void {
    const names: string[] = new Array(this.names.length * 2);
    const values: string[] = new Array(this.names.length * 2);
    for (let i = 0; i < this.count; i++) {
      names[i] = this.name(i);
      values[i] = this.value(i);
    }
    this.names = names;
    this.values = values;
    this.head = 0;
  }
}
