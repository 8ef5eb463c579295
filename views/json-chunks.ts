import { LazyList } from './lazy-list.js';
import { omitDefaults } from './proto-json.js';

/** About how many characters a streamed view gathers before it hands a piece over. */
export const CHUNK_CHARS = 64 * 1024;

/** Where the pieces gather; a generator hands `buf` over once it holds `limit` characters. */
interface Sink {
  buf: string;
  limit: number;
  omit: boolean;
}

const isPlainObject = (v: unknown): v is Record<string, unknown> => {
  if (v === null || typeof v !== 'object' || Array.isArray(v)) return false;
  const proto = Object.getPrototypeOf(v);
  return (
    (proto === Object.prototype || proto === null) && typeof (v as { toJSON?: unknown }).toJSON !== 'function'
  );
};

/**
 * Walked piece by piece rather than stringified whole: a non-empty list, a lazy list, or an
 * object with one (so it can never be left empty by `omitDefaults`, and its braces can be
 * written before its fields are seen). A lazy list deeper down makes every object above it
 * walked, so it is only ever made element by element.
 */
function walked(v: unknown): boolean {
  if (Array.isArray(v)) return v.length > 0;
  return v instanceof LazyList || holdsList(v);
}

function holdsList(v: unknown): boolean {
  if (!isPlainObject(v)) return false;
  for (const key in v) {
    const inner = v[key];
    if ((Array.isArray(inner) && inner.length > 0) || inner instanceof LazyList) return true;
  }
  for (const key in v) if (holdsLazy(v[key])) return true;
  return false;
}

function holdsLazy(v: unknown): boolean {
  if (v instanceof LazyList) return true;
  if (Array.isArray(v)) return v.some(holdsLazy);
  if (!isPlainObject(v)) return false;
  for (const key in v) if (holdsLazy(v[key])) return true;
  return false;
}

/** A value stringified whole, indented for `depth`; undefined when JSON leaves it out. */
function whole(v: unknown, depth: number, omit: boolean): string | undefined {
  const s = JSON.stringify(omit ? omitDefaults(v) : v, null, 1) as string | undefined;
  return s === undefined || depth === 0 ? s : s.replaceAll('\n', `\n${' '.repeat(depth)}`);
}

/** What `omitDefaults` drops from an object (after its own recursion). */
function dropped(v: unknown): boolean {
  if (v === undefined || v === '' || v === 0 || v === false) return true;
  if (Array.isArray(v)) return v.length === 0;
  return v !== null && typeof v === 'object' && Object.keys(v).length === 0;
}

function* value(sink: Sink, v: unknown, depth: number): Generator<string> {
  if (!walked(v)) {
    sink.buf += whole(v, depth, sink.omit) ?? 'null';
  } else if (Array.isArray(v) || v instanceof LazyList) {
    const pad = ' '.repeat(depth + 1);
    const lazy = v instanceof LazyList;
    sink.buf += '[\n';
    for (let i = 0; i < v.length; i++) {
      sink.buf += i === 0 ? pad : `,\n${pad}`;
      yield* value(sink, lazy ? v.at(i) : v[i], depth + 1);
      if (sink.buf.length >= sink.limit) {
        yield sink.buf;
        sink.buf = '';
      }
    }
    sink.buf += `\n${' '.repeat(depth)}]`;
  } else {
    yield* object(sink, v as Record<string, unknown>, depth);
  }
}

function* object(sink: Sink, v: Record<string, unknown>, depth: number): Generator<string> {
  const pad = ' '.repeat(depth + 1);
  let first = true;
  sink.buf += '{\n';
  for (const [key, inner] of Object.entries(v)) {
    let text: string | undefined;
    if (!walked(inner)) {
      const cleaned = sink.omit ? omitDefaults(inner) : inner;
      if (sink.omit && dropped(cleaned)) continue;
      text = whole(cleaned, depth + 1, false);
      if (text === undefined) continue;
    }
    sink.buf += `${first ? pad : `,\n${pad}`}${JSON.stringify(key)}: `;
    first = false;
    if (text === undefined) yield* value(sink, inner, depth + 1);
    else sink.buf += text;
  }
  sink.buf += `\n${' '.repeat(depth)}}`;
}

/**
 * `JSON.stringify(omit ? omitDefaults(v) : v, null, 1)` and a newline, as the admin prints
 * JSON (see `json()` in result.ts), in pieces of about `limit` characters: lists are walked
 * element by element, so neither the whole text nor a defaults-free copy of `v` is ever held.
 */
export function* jsonChunks(v: unknown, omit: boolean, limit = CHUNK_CHARS): Generator<string> {
  const sink: Sink = { buf: '', limit, omit };
  yield* value(sink, v, 0);
  yield `${sink.buf}\n`;
}
