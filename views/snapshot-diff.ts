/**
 * Semantic diffs of snapshots. A raw diff of `State` would name hosts and runtime layers by
 * array index, so one host leaving would read as every later host changing. Here arrays
 * that have an identity become objects keyed by it (hosts by `address`, runtime layers by
 * `name`, rejected updates by `seq`; clusters and listeners are already keyed by name), and
 * the RFC 6902 patch between two such documents says what changed and to whom.
 */
import jsonpatch, { type Operation } from 'fast-json-patch';
import type { ClusterEntry, State } from '../reducers/index.js';

/** The document semantic patches and blame paths refer to: `State` with identity-keyed arrays. */
export type SemanticDocument = Record<string, unknown>;

const documents = new WeakMap<State, SemanticDocument>();
const clusterDocs = new WeakMap<ClusterEntry, Record<string, unknown>>();

/**
 * `state` as a semantic document, without `seq` and `at` (they change with every event and
 * would drown the real change). Memoised per snapshot and per cluster: snapshots share
 * structure, so an unchanged cluster keeps its document and the diff skips it by identity.
 */
export function semanticView(state: State): SemanticDocument {
  let doc = documents.get(state);
  if (doc) return doc;
  const clusters: Record<string, unknown> = {};
  for (const [name, entry] of Object.entries(state.clusters)) clusters[name] = clusterDoc(entry);
  doc = {
    server: state.server,
    bootstrap: state.bootstrap,
    clusterManager: state.clusterManager,
    clusters,
    listeners: state.listeners,
    runtime: { layers: keyBy(state.runtime.layers, layerKey) },
    logging: state.logging,
    stats: state.stats,
    drain: state.drain,
    rejected: keyBy(state.rejected, rejectedKey),
  };
  documents.set(state, doc);
  return doc;
}

function clusterDoc(entry: ClusterEntry): Record<string, unknown> {
  let doc = clusterDocs.get(entry);
  if (!doc) {
    doc = { ...entry, hosts: keyBy(entry.hosts, hostKey) };
    clusterDocs.set(entry, doc);
  }
  return doc;
}

const hostKey = (host: { address: string }) => host.address;
const layerKey = (layer: { name: string }) => layer.name;
const rejectedKey = (rejected: { seq: number }) => String(rejected.seq);

/** The identity of the elements of the array at `path` (tokens from the root), or null. */
function identityAt(path: readonly string[]): ((item: never) => string) | null {
  if (path.length === 3 && path[0] === 'clusters' && path[2] === 'hosts') return hostKey;
  if (path.length === 2 && path[0] === 'runtime' && path[1] === 'layers') return layerKey;
  if (path.length === 1 && path[0] === 'rejected') return rejectedKey;
  return null;
}

/** Keys an array by identity; a repeated key gets `#<index>` so no element is lost. */
function keyBy<T>(items: readonly T[], key: (item: T) => string): Record<string, T> {
  const out: Record<string, T> = {};
  items.forEach((item, i) => {
    const k = key(item);
    out[Object.hasOwn(out, k) ? `${k}#${i}` : k] = item;
  });
  return out;
}

/** The change from `from` to `to` as RFC 6902 operations on their semantic documents. */
export function semanticDiff(from: State, to: State): Operation[] {
  return jsonpatch.compare(semanticView(from), semanticView(to));
}

/**
 * Applies a semantic patch to a copy of `doc` (validating every operation), leaving `doc`
 * untouched: snapshots are frozen and shared.
 */
export function applySemanticPatch(doc: SemanticDocument, ops: Operation[]): SemanticDocument {
  return jsonpatch.applyPatch(jsonpatch.deepClone(doc), ops, true, false).newDocument;
}

/** Splits an RFC 6901 pointer (`/clusters/svc/hosts/10.0.0.1:80/weight`) into its tokens. */
export function parsePointer(pointer: string): string[] | null {
  if (pointer === '') return [];
  if (!pointer.startsWith('/')) return null;
  return pointer
    .slice(1)
    .split('/')
    .map((token) => token.replaceAll('~1', '/').replaceAll('~0', '~'));
}

/**
 * The value at `tokens` in the semantic document of `state`, or undefined when absent. It
 * walks the snapshot itself (keying only the arrays on the way), because blame calls it
 * once per event and building a whole document each time would cost O(clusters).
 */
export function valueAt(state: State, tokens: readonly string[]): unknown {
  if (tokens.length === 0) return semanticView(state);
  if (tokens[0] === 'seq' || tokens[0] === 'at') return undefined;
  let node: unknown = state;
  for (let i = 0; i < tokens.length; i++) {
    const token = tokens[i] as string;
    if (Array.isArray(node)) {
      const identity = identityAt(tokens.slice(0, i));
      if (identity) node = keyBy(node as never[], identity);
    }
    if (node === null || typeof node !== 'object' || !Object.hasOwn(node, token)) return undefined;
    node = (node as Record<string, unknown>)[token];
  }
  return semanticNode(tokens, node);
}

/** `node`, found at `path` in the snapshot, as the semantic document shows it. */
function semanticNode(path: readonly string[], node: unknown): unknown {
  if (path[0] === 'clusters' && path.length <= 2) {
    if (path.length === 2) return clusterDoc(node as ClusterEntry);
    return Object.fromEntries(
      Object.entries(node as Record<string, ClusterEntry>).map(([k, v]) => [k, clusterDoc(v)]),
    );
  }
  if (path.length === 1 && path[0] === 'runtime') {
    return { layers: keyBy((node as State['runtime']).layers, layerKey) };
  }
  const identity = Array.isArray(node) ? identityAt(path) : null;
  return identity ? keyBy(node as never[], identity) : node;
}
