import { fieldPath } from './report.js';

/**
 * How deep a config may nest, counting objects and lists. The reference's protobuf parsers
 * (binary and JSON) stop at 100 levels of messages; the deepest of the reference's examples
 * nests 22 levels here. Every later step (the walk, immer's freeze, the event log's
 * `JSON.stringify`) recurses, so a value nested 100,000 levels (a `Struct` in
 * `node.metadata`, a filter's TypedStruct, an RBAC rule) would overflow the stack there,
 * after validation passed.
 */
export const MAX_NESTING = 100;

interface Frame {
  value: unknown;
  depth: number;
  parent: Frame | null;
  key: string;
}

/**
 * The field path of the first value nested deeper than `MAX_NESTING` in parsed JSON or YAML,
 * or null when none is. Iterative, so it never overflows the stack it guards.
 */
export function nestedTooDeep(value: unknown, base = ''): string | null {
  const stack: Frame[] = [{ value, depth: 0, parent: null, key: '' }];
  for (let frame = stack.pop(); frame; frame = stack.pop()) {
    const v = frame.value;
    if (typeof v !== 'object' || v === null) continue;
    if (frame.depth >= MAX_NESTING) return pathOf(frame, base);
    if (Array.isArray(v))
      for (let i = 0; i < v.length; i++)
        stack.push({ value: v[i], depth: frame.depth + 1, parent: frame, key: `[${i}]` });
    else
      for (const [k, child] of Object.entries(v))
        stack.push({ value: child, depth: frame.depth + 1, parent: frame, key: k });
  }
  return null;
}

/** Keys of a too-deep path shown: more than the deepest real config has, fewer than 100 `[0]`s. */
const SHOWN = 30;

function pathOf(frame: Frame, base: string): string {
  const keys: string[] = [];
  for (let f: Frame | null = frame; f?.parent; f = f.parent) keys.push(f.key);
  const path = keys
    .reverse()
    .slice(0, SHOWN)
    .reduce((path, key) => (key.startsWith('[') ? `${path}${key}` : fieldPath(path, key)), base);
  return keys.length > SHOWN ? `${path}...` : path;
}

/** The finding for a value `nestedTooDeep` found. */
export const TOO_DEEP = `nested more than ${MAX_NESTING} levels deep (objects and lists)`;
