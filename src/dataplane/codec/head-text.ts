/*
 * The data plane holds head values (fields, paths, authorities) as latin1 strings: a character
 * a byte, as peers send them and as they are written back out. Text everywhere else (config,
 * protobuf messages, JSON, log lines) is Unicode, written as UTF-8. A value that crosses from
 * one to the other goes through these, or each byte past ASCII turns into two characters one
 * way (`José` became `JosÃ©` in logs and in authorization requests) and into a wrong byte the
 * other (`€` became 0xAC).
 */

/** A byte past ASCII in a head value. */
const HIGH_BYTE = /[\x80-\xff]/;
/** A character past ASCII in text. */
const NOT_ASCII = /[\u0080-\uffff]/;

/** A head value's bytes as the UTF-8 text they nearly always are; a byte that is no UTF-8 is U+FFFD. */
export function headToText(value: string): string {
  return HIGH_BYTE.test(value) ? Buffer.from(value, 'latin1').toString('utf8') : value;
}

/** Text as the head value of its UTF-8 bytes, as the reference writes config text into heads. */
export function textToHead(text: string): string {
  return NOT_ASCII.test(text) ? Buffer.from(text, 'utf8').toString('latin1') : text;
}
