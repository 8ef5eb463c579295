/**
 * proto3 JSON durations: `"<seconds>[.<fraction>]s"`. The canonical output uses 0, 3, 6 or 9
 * fractional digits, as protobuf's own JSON printer does (`0.25s` -> `0.250s`).
 */
const DURATION = /^(-)?(\d+)(?:\.(\d{1,9}))?s$/;

/** Parsed duration: sign, whole seconds (as a decimal string, may exceed 2^53) and nanos. */
export interface DurationParts {
  negative: boolean;
  seconds: string;
  nanos: number;
}

/** Parses `1.5s`; undefined when the text is not a proto3 JSON duration. */
export function parseDuration(text: string): DurationParts | undefined {
  const m = DURATION.exec(text.trim());
  if (!m) return undefined;
  return {
    negative: m[1] === '-',
    seconds: m[2]!.replace(/^0+(?=\d)/, ''),
    nanos: m[3] ? Number(m[3].padEnd(9, '0')) : 0,
  };
}

/** Formats a duration canonically: `5s`, `0.250s`, `1.000001s`, `-2.500s`. */
export function formatDuration(parts: DurationParts): string {
  let fraction = '';
  if (parts.nanos !== 0) {
    const nine = String(parts.nanos).padStart(9, '0');
    fraction =
      '.' + (nine.endsWith('000000') ? nine.slice(0, 3) : nine.endsWith('000') ? nine.slice(0, 6) : nine);
  }
  const zero = parts.seconds === '0' && parts.nanos === 0;
  return `${parts.negative && !zero ? '-' : ''}${parts.seconds}${fraction}s`;
}

/** `{seconds, nanos}` as decoded from binary (seconds may be a Long) to the canonical string. */
export function durationFromMessage(seconds: unknown, nanos: unknown): string {
  const s = String(seconds ?? 0);
  const n = Number(nanos ?? 0);
  const negative = s.startsWith('-') || n < 0;
  return formatDuration({ negative, seconds: s.replace(/^-/, ''), nanos: Math.abs(n) });
}
