/**
 * Times as people write and read them. Event times are store-clock milliseconds since the
 * epoch; people read them in their own zone and in UTC, and ask for "ten minutes ago", "at
 * 10:00" (their local time) or an exact RFC 3339 instant.
 */

const pad = (n: number, width = 2): string => String(n).padStart(width, '0');

/** `2026-11-21T14:00:00.100Z` */
export function formatUtc(ms: number): string {
  return new Date(ms).toISOString();
}

/** `2026-11-21 15:00:00.100 +01:00`, in the zone of this process (`TZ`). */
export function formatLocal(ms: number): string {
  const d = new Date(ms);
  const offset = -d.getTimezoneOffset();
  const sign = offset < 0 ? '-' : '+';
  const zone = `${sign}${pad(Math.floor(Math.abs(offset) / 60))}:${pad(Math.abs(offset) % 60)}`;
  return (
    `${d.getFullYear()}-${pad(d.getMonth() + 1)}-${pad(d.getDate())} ` +
    `${pad(d.getHours())}:${pad(d.getMinutes())}:${pad(d.getSeconds())}.${pad(d.getMilliseconds(), 3)} ${zone}`
  );
}

/** `3d 4h`, `2h 5m`, `7m 3s`, `42s`: the two largest units, as an operator reads an uptime. */
export function shortDuration(ms: number): string {
  let s = Math.floor(ms / 1000);
  const parts: Array<[number, string]> = [];
  for (const [size, unit] of [
    [86400, 'd'],
    [3600, 'h'],
    [60, 'm'],
  ] as const) {
    parts.push([Math.floor(s / size), unit]);
    s %= size;
  }
  parts.push([s, 's']);
  const first = parts.findIndex(([n]) => n > 0);
  if (first < 0) return '0s';
  return parts
    .slice(first, first + 2)
    .filter(([n], i) => i === 0 || n > 0)
    .map(([n, u]) => `${n}${u}`)
    .join(' ');
}

const UNITS: Record<string, number> = { ms: 1, s: 1000, m: 60_000, h: 3_600_000, d: 86_400_000 };

/** `90s`, `10m`, `1h30m`, `500ms`, `2d` in milliseconds; null when it is not a duration. */
export function parseDuration(text: string): number | null {
  if (!/^(\d+(\.\d+)?(ms|s|m|h|d))+$/.test(text)) return null;
  let total = 0;
  for (const m of text.matchAll(/(\d+(?:\.\d+)?)(ms|s|m|h|d)/g)) total += Number(m[1]) * (UNITS[m[2]!] ?? 0);
  return total;
}

/** A point in an event log: after a sequence number, or at an instant (ms since the epoch). */
export type TimePoint = { seq: number } | { time: number };

export const TIME_FORMS =
  'a sequence number, an RFC 3339 time (2026-11-21T14:02:07Z), a local time (2026-11-21T15:02, 2026-11-21 15:02:07 or 15:02), ' +
  "'now', or a time ago (-5m, 10m, 1h30m)";

const LOCAL_DATE_TIME = /^(\d{4})-(\d{2})-(\d{2})(?:[Tt ](\d{2}):(\d{2})(?::(\d{2})(?:\.(\d{1,3}))?)?)?$/;
const LOCAL_TIME = /^(\d{2}):(\d{2})(?::(\d{2})(?:\.(\d{1,3}))?)?$/;
const RFC3339 = /^\d{4}-\d{2}-\d{2}[Tt ]\d{2}:\d{2}(:\d{2}(\.\d+)?)?([Zz]|[+-]\d{2}:\d{2})$/;

const millis = (fraction: string | undefined): number => (fraction ? Number(fraction.padEnd(3, '0')) : 0);

/**
 * A point as a person writes it. `now` is what "now" means: the current time for a live
 * proxy, the last event's time for a recorded log (an incident is read after the fact).
 * A time without a zone is local time; a time of day alone is that time on the local day
 * of `now`; a duration is that long before `now`, with or without a leading `-`.
 */
export function parseTimePoint(text: string, now: number): TimePoint | string {
  const t = text.trim();
  if (/^\d+$/.test(t)) return { seq: Number(t) };
  if (t === 'now') return { time: now };
  const ago = parseDuration(t.startsWith('-') ? t.slice(1) : t);
  if (ago !== null) return { time: now - ago };
  if (RFC3339.test(t)) {
    const time = Date.parse(t.replace(' ', 'T'));
    if (!Number.isNaN(time)) return { time };
  }
  const dateTime = LOCAL_DATE_TIME.exec(t);
  if (dateTime) {
    const [, y, mo, d, h, mi, s, f] = dateTime;
    const date = new Date(
      Number(y),
      Number(mo) - 1,
      Number(d),
      Number(h ?? 0),
      Number(mi ?? 0),
      Number(s ?? 0),
    );
    date.setMilliseconds(millis(f));
    // A day or hour that does not exist (2026-02-30, 25:00) rolls over silently in Date: refuse it.
    if (date.getDate() === Number(d) && date.getMonth() === Number(mo) - 1 && Number(h ?? 0) < 24) {
      return { time: date.getTime() };
    }
  }
  const time = LOCAL_TIME.exec(t);
  if (time) {
    const [, h, mi, s, f] = time;
    const date = new Date(now);
    date.setHours(Number(h), Number(mi), Number(s ?? 0), millis(f));
    if (Number(h) < 24 && Number(mi) < 60) return { time: date.getTime() };
  }
  return `'${text}' is not ${TIME_FORMS}`;
}
