import type { LogLevel } from '../../events/logging.js';
import { escapeNewlines, jsonEscape } from './escape.js';
import { SHORT_LEVEL } from './levels.js';
import { sourceBasename } from './source-path.js';

/** One log record, as the format flags see it. */
export interface LogLine {
  /** Wall-clock time; rendered in the local time zone. */
  readonly time: Date;
  /** Nanoseconds within the second (0..999 999 999), for `%e %f %F`. */
  readonly nanos: number;
  readonly level: LogLevel;
  /** Logger name: the component, or the source file with fine-grain logging. */
  readonly logger: string;
  readonly message: string;
  readonly pid: number;
  readonly threadId: number;
  /** Where the log call is; present only when the format needs it. */
  readonly source?: { readonly file: string; readonly line: number; readonly func?: string };
}

/** A compiled `--log-format`. */
export interface LogFormatter {
  (line: LogLine): string;
  /** The format prints source locations, so records must capture them (costly). */
  readonly needsSource: boolean;
}

const WEEKDAYS = ['Sunday', 'Monday', 'Tuesday', 'Wednesday', 'Thursday', 'Friday', 'Saturday'];
const MONTHS = [
  'January',
  'February',
  'March',
  'April',
  'May',
  'June',
  'July',
  'August',
  'September',
  'October',
  'November',
  'December',
];

const pad2 = (n: number) => String(n).padStart(2, '0');
const hour12 = (d: Date) => d.getHours() % 12 || 12;
const ampm = (d: Date) => (d.getHours() < 12 ? 'AM' : 'PM');
const hms = (d: Date) => `${pad2(d.getHours())}:${pad2(d.getMinutes())}:${pad2(d.getSeconds())}`;
const mmddyy = (d: Date) => `${pad2(d.getMonth() + 1)}/${pad2(d.getDate())}/${pad2(d.getFullYear() % 100)}`;

function utcOffset(d: Date): string {
  const minutes = -d.getTimezoneOffset();
  const sign = minutes < 0 ? '-' : '+';
  const abs = Math.abs(minutes);
  return `${sign}${pad2(Math.floor(abs / 60))}:${pad2(abs % 60)}`;
}

type Piece = (line: LogLine) => string;

/** Every flag of the spec (spdlog's letters), keyed by the character after `%`. */
const FLAG_PIECES: Record<string, Piece> = {
  v: (l) => l.message,
  _: (l) => escapeNewlines(l.message),
  j: (l) => jsonEscape(l.message),
  t: (l) => String(l.threadId),
  P: (l) => String(l.pid),
  n: (l) => l.logger,
  l: (l) => l.level,
  L: (l) => SHORT_LEVEL[l.level],
  a: (l) => WEEKDAYS[l.time.getDay()]!.slice(0, 3),
  A: (l) => WEEKDAYS[l.time.getDay()]!,
  b: (l) => MONTHS[l.time.getMonth()]!.slice(0, 3),
  B: (l) => MONTHS[l.time.getMonth()]!,
  c: (l) =>
    `${WEEKDAYS[l.time.getDay()]!.slice(0, 3)} ${MONTHS[l.time.getMonth()]!.slice(0, 3)} ` +
    `${pad2(l.time.getDate())} ${hms(l.time)} ${l.time.getFullYear()}`,
  C: (l) => pad2(l.time.getFullYear() % 100),
  Y: (l) => String(l.time.getFullYear()),
  D: (l) => mmddyy(l.time),
  x: (l) => mmddyy(l.time),
  m: (l) => pad2(l.time.getMonth() + 1),
  d: (l) => pad2(l.time.getDate()),
  H: (l) => pad2(l.time.getHours()),
  I: (l) => pad2(hour12(l.time)),
  M: (l) => pad2(l.time.getMinutes()),
  S: (l) => pad2(l.time.getSeconds()),
  e: (l) => String(Math.floor(l.nanos / 1e6)).padStart(3, '0'),
  f: (l) => String(Math.floor(l.nanos / 1e3)).padStart(6, '0'),
  F: (l) => String(l.nanos).padStart(9, '0'),
  p: (l) => ampm(l.time),
  r: (l) =>
    `${pad2(hour12(l.time))}:${pad2(l.time.getMinutes())}:${pad2(l.time.getSeconds())} ${ampm(l.time)}`,
  R: (l) => `${pad2(l.time.getHours())}:${pad2(l.time.getMinutes())}`,
  T: (l) => hms(l.time),
  X: (l) => hms(l.time),
  z: (l) => utcOffset(l.time),
  '%': () => '%',
  '@': (l) => (l.source ? `${l.source.file}:${l.source.line}` : ''),
  s: (l) => (l.source ? sourceBasename(l.source.file) : ''),
  g: (l) => l.source?.file ?? '',
  '#': (l) => (l.source ? String(l.source.line) : ''),
  '!': (l) => l.source?.func ?? '',
};

const SOURCE_FLAGS = new Set(['@', 's', 'g', '#', '!']);

/**
 * Compiles a `--log-format` once into a function of a record. An unknown `%x` (and a
 * trailing lone `%`) is printed as written, as spdlog does.
 */
export function compileLogFormat(format: string): LogFormatter {
  const pieces: Array<string | Piece> = [];
  let literal = '';
  let needsSource = false;
  for (let i = 0; i < format.length; i++) {
    const ch = format[i]!;
    const next = format[i + 1];
    const piece = ch === '%' && next !== undefined ? FLAG_PIECES[next] : undefined;
    if (!piece) {
      literal += ch;
      continue;
    }
    if (literal) pieces.push(literal);
    literal = '';
    pieces.push(piece);
    if (SOURCE_FLAGS.has(next!)) needsSource = true;
    i++;
  }
  if (literal) pieces.push(literal);
  const render = (line: LogLine) => {
    let out = '';
    for (const piece of pieces) out += typeof piece === 'string' ? piece : piece(line);
    return out;
  };
  return Object.assign(render, { needsSource });
}
