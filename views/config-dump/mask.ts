import type { Json, JsonObject } from '../../events/index.js';
import { LazyList } from '../lazy-list.js';

type Tree = Map<string, Tree>;

function treeOf(paths: readonly string[]): Tree {
  const root: Tree = new Map();
  for (const path of paths) {
    let node = root;
    for (const part of path.split('.')) {
      if (!part) continue;
      let next = node.get(part);
      if (!next) {
        next = new Map();
        node.set(part, next);
      }
      node = next;
    }
  }
  return root;
}

function trim(value: Json, tree: Tree): Json {
  if (tree.size === 0) return value;
  // A mask continues into each element of a repeated field.
  if (Array.isArray(value)) return value.map((v) => trim(v, tree));
  // a lazily made list (clusters in a dump) is trimmed as each element is made
  if (value instanceof LazyList) return value.map((v) => trim(v as Json, tree)) as unknown as Json;
  if (value === null || typeof value !== 'object') return value;
  const out: JsonObject = {};
  // `@type` says what an Any holds; it survives every mask.
  if (value['@type'] !== undefined) out['@type'] = value['@type'];
  for (const [key, sub] of tree) {
    const inner = value[key];
    if (inner !== undefined) out[key] = trim(inner, sub);
  }
  return out;
}

/** Applies a FieldMask (paths like `cluster.name`) to one message; `@type` is always kept. */
export function applyMask(value: JsonObject, paths: readonly string[]): JsonObject {
  return trim(value, treeOf(paths)) as JsonObject;
}
