import type { JsonObject } from '../../events/index.js';

/**
 * The bytes a `core.DataSource` holds inline (`inline_string`, or `inline_bytes` in base64),
 * or undefined when it names a file or nothing: what a file means is the caller's choice.
 */
export function inlineBytes(ds: JsonObject): Buffer | undefined {
  if (typeof ds.inline_string === 'string') return Buffer.from(ds.inline_string);
  if (typeof ds.inline_bytes === 'string') return Buffer.from(ds.inline_bytes, 'base64');
  return undefined;
}
