/**
 * `normalize_path` and `merge_slashes`, as the reference applies them to `:path` before any
 * filter or route sees it (its `PathUtil::canonicalPath`, which is Chromium's URL path
 * canonicalizer, and `PathUtil::mergeSlashes`). Only the part before `?` changes.
 */

// Character classes of the canonicalizer's table (one per byte).
/** Needs a look: a dot, `\`, `%`, or a character to escape. */
const SPECIAL = 1;
const ESCAPE_BIT = 2;
/** Copied as is when raw; decoded when percent-encoded (RFC 3986 unreserved: ALPHA DIGIT - _ ~). */
const UNESCAPE = 4;
/** NUL: escaped, and the path refused. */
const INVALID_BIT = 8;

const ESCAPE = ESCAPE_BIT | SPECIAL;

/** The canonicalizer's table: what happens to each byte in a path. */
const TABLE = (() => {
  const t = new Uint8Array(256).fill(ESCAPE);
  t[0] = INVALID_BIT | SPECIAL;
  for (const c of "!$&'()*+,/:;=@[]") t[c.charCodeAt(0)] = 0;
  for (const c of '-_~0123456789') t[c.charCodeAt(0)] = UNESCAPE;
  for (let c = 65; c <= 90; c++) {
    t[c] = UNESCAPE;
    t[c + 32] = UNESCAPE;
  }
  t[46] = SPECIAL; // '.': only special where it makes a dot segment
  return t;
})();

const HEX = '0123456789ABCDEF';

function hexValue(c: number): number {
  if (c >= 48 && c <= 57) return c - 48;
  if (c >= 65 && c <= 70) return c - 55;
  if (c >= 97 && c <= 102) return c - 87;
  return -1;
}

/** 1 for `.`, 3 for `%2e` / `%2E`, else 0. */
function dotLength(s: string, i: number, end: number): number {
  const c = s.charCodeAt(i);
  if (c === 46) return 1;
  if (c === 37 && i + 3 <= end && s.charCodeAt(i + 1) === 50 && (s.charCodeAt(i + 2) | 32) === 101) return 3;
  return 0;
}

function isSlash(c: number): boolean {
  return c === 47 || c === 92;
}

/** `out` cut back to the slash before its last segment (never above the root). */
function upOneSegment(out: string): string {
  if (out.length <= 1) return out;
  const slash = out.lastIndexOf('/', out.length - 2);
  return slash <= 0 ? '/' : out.slice(0, slash + 1);
}

/** The UTF-8 bytes of a character beyond one byte, percent-encoded; null for a lone surrogate. */
function escapeWide(s: string, i: number): { text: string; width: number } | null {
  const cp = s.codePointAt(i) as number;
  if (cp >= 0xd800 && cp <= 0xdfff) return null;
  let text = '';
  for (const b of Buffer.from(String.fromCodePoint(cp), 'utf8')) text += `%${HEX[b >> 4]}${HEX[b & 15]}`;
  return { text, width: cp > 0xffff ? 2 : 1 };
}

/**
 * The path part of `path` canonicalized, query kept: `.` and `..` segments resolved (also when
 * written `%2e`, never above the root), `\` read as `/`, percent-encoded unreserved characters
 * decoded (other escapes kept as written, hex case included), characters a path may not hold
 * raw (space, `"`, `<`, `>`, `^`, backquote, braces, `|`, controls, bytes over 0x7f) escaped. Null when
 * the path holds a NUL (raw or `%00`) or a lone surrogate: the reference answers such a path 400.
 */
export function canonicalPath(path: string): string | null {
  const q = path.indexOf('?');
  const end = q < 0 ? path.length : q;
  let simple = end > 0 && path.charCodeAt(0) === 47;
  for (let i = 0; simple && i < end; i++) {
    const c = path.charCodeAt(i);
    // A dot inside a name (`app.min.js`) is copied as is; only one starting a segment needs a look.
    if (c === 46) simple = path.charCodeAt(i - 1) !== 47;
    else if (c > 0xff || (TABLE[c] as number) & SPECIAL) simple = false;
  }
  if (simple) return path;
  let ok = true;
  let out = end > 0 && isSlash(path.charCodeAt(0)) ? '' : '/';
  for (let i = 0; i < end; i++) {
    const c = path.charCodeAt(i);
    if (c > 0xff) {
      const wide = escapeWide(path, i);
      if (wide === null) return null;
      out += wide.text;
      i += wide.width - 1;
      continue;
    }
    const flags = TABLE[c] as number;
    if ((flags & SPECIAL) === 0) {
      out += path[i];
      continue;
    }
    const dot = dotLength(path, i, end);
    if (dot > 0) {
      if (out.charCodeAt(out.length - 1) !== 47) {
        out += '.';
        i += dot - 1;
        continue;
      }
      // A dot right after a slash: `.` or `..` as a whole segment, or part of a name.
      const after = i + dot;
      if (after === end || isSlash(path.charCodeAt(after))) {
        i = after; // `.`: skipped with its slash
        continue;
      }
      const second = dotLength(path, after, end);
      const afterSecond = after + second;
      if (second > 0 && (afterSecond === end || isSlash(path.charCodeAt(afterSecond)))) {
        out = upOneSegment(out);
        i = afterSecond;
        continue;
      }
      out += '.';
      i += dot - 1;
    } else if (c === 92) {
      out += '/';
    } else if (c === 37) {
      const hi = i + 2 < end ? hexValue(path.charCodeAt(i + 1)) : -1;
      const lo = hi < 0 ? -1 : hexValue(path.charCodeAt(i + 2));
      if (lo < 0) {
        // Not an escape: the reference lets the `%` through.
        out += '%';
        continue;
      }
      const value = hi * 16 + lo;
      const decoded = TABLE[value] as number;
      if (decoded & UNESCAPE) out += String.fromCharCode(value);
      else {
        if (decoded & INVALID_BIT) ok = false;
        out += path.slice(i, i + 3);
      }
      i += 2;
    } else {
      if (flags & INVALID_BIT) ok = false;
      out += `%${HEX[c >> 4]}${HEX[c & 15]}`;
    }
  }
  return ok ? out + path.slice(end) : null;
}

/**
 * The reference's `merge_slashes`: runs of `/` in the path part become one (a leading and a
 * trailing slash kept); the query is untouched.
 */
export function mergeSlashes(path: string): string {
  const q = path.indexOf('?');
  const end = q < 0 ? path.length : q;
  const at = path.indexOf('//');
  if (at < 0 || at >= end) return path;
  const part = path.slice(0, end);
  const segments = part.split('/').filter((s) => s !== '');
  const lead = part.startsWith('/') ? '/' : '';
  const trail = part.endsWith('/') ? '/' : '';
  return lead + segments.join('/') + trail + path.slice(end);
}

/**
 * `path_with_escaped_slashes_action`: `%2F` and `%5C` kept, refused (400), unescaped, or
 * unescaped and answered with a redirect to the new path.
 */
export type EscapedSlashes = 'KEEP' | 'REJECT' | 'UNESCAPE' | 'REDIRECT';

/** What `normalizeRequestPath` made of a path: route it, refuse it (400), or redirect to it (307). */
export type PathVerdict = 'ok' | 'invalid' | 'redirect';

/** The path part of `path` with `%2F` and `%5C` (either case) unescaped to `/` and `\`; the query untouched. */
export function unescapeSlashes(path: string): string {
  const q = path.indexOf('?');
  const end = q < 0 ? path.length : q;
  const part = path.slice(0, end);
  if (!part.includes('%')) return path;
  return part.replace(/%2f/gi, '/').replace(/%5c/gi, '\\') + path.slice(end);
}

/**
 * Applies the connection manager's path settings to `:path` in place, as the reference's
 * `maybeNormalizePath`: escaped slashes first, then normalization (merging after it catches
 * slashes an escape hid); `invalid` when the path is invalid or holds an escaped slash that
 * `REJECT` refuses (400), `redirect` when `REDIRECT` unescaped one (the whole path normalized,
 * as the reference's Location is). Paths not starting with `/` (`*`, authority form) are left to the router.
 */
export function normalizeRequestPath(
  req: { path: string },
  normalize: boolean,
  merge: boolean,
  escapedSlashes: EscapedSlashes,
): PathVerdict {
  if (req.path.charCodeAt(0) !== 47) return 'ok';
  let verdict: PathVerdict = 'ok';
  if (escapedSlashes !== 'KEEP') {
    const unescaped = unescapeSlashes(req.path);
    if (unescaped !== req.path) {
      if (escapedSlashes === 'REJECT') return 'invalid';
      if (escapedSlashes === 'REDIRECT') verdict = 'redirect';
    }
    req.path = unescaped;
  }
  if (normalize) {
    const canonical = canonicalPath(req.path);
    if (canonical === null) return 'invalid';
    req.path = canonical;
  }
  if (merge) req.path = mergeSlashes(req.path);
  return verdict;
}
