/** Bytes absl::CEscape writes by name rather than in octal. */
const NAMED = new Map<number, string>(
  [
    ['\n', '\\n'],
    ['\r', '\\r'],
    ['\t', '\\t'],
    ['"', '\\"'],
    ["'", "\\'"],
    ['\\', '\\\\'],
  ].map(([ch, escaped]) => [ch!.charCodeAt(0), escaped!]),
);

/**
 * C-escapes a string the way absl::CEscape does: `\n \r \t \" \' \\` by name and every
 * other byte outside printable ASCII (including UTF-8 bytes) as a three-digit octal.
 */
export function cEscape(text: string): string {
  let out = '';
  for (const byte of Buffer.from(text, 'utf8')) {
    const named = NAMED.get(byte);
    if (named) out += named;
    else if (byte < 0x20 || byte >= 0x7f) out += `\\${byte.toString(8).padStart(3, '0')}`;
    else out += String.fromCharCode(byte);
  }
  return out;
}

/**
 * `--log-format-escaped`: escapes a whole formatted line so one message stays on one line,
 * keeping the trailing whitespace (the end of line) as it is.
 */
export function escapeLogLine(line: string): string {
  const body = line.trimEnd();
  return cEscape(body) + line.slice(body.length);
}

/** `%_`: the message with each newline written as `\n`. */
export function escapeNewlines(text: string): string {
  return text.replaceAll('\n', '\\n');
}

/** `%j`: the message JSON-escaped, without the surrounding quotes, for JSON log layouts. */
export function jsonEscape(text: string): string {
  return JSON.stringify(text).slice(1, -1);
}
