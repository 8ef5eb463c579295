/**
 * The bootstrap's `node` and its `cluster_manager.local_cluster_name`, read once per bootstrap
 * (kept by its identity): the pure half of the bootstrap's compile step that `/server_info`
 * and the cluster manager's zone-aware routing read, as views may not import src/.
 */
import type { Json, JsonObject } from '../../events/index.js';
import { arrayOf, objectOf, stringOr } from './values.js';

export interface NodeSettings {
  id: string;
  cluster: string;
  metadata: JsonObject;
  /** `node.locality` as written; empty when absent. */
  locality: JsonObject;
  extensions: Json[];
  clientFeatures: Json[];
  listeningAddresses: Json[];
  /** `cluster_manager.local_cluster_name`: the proxy's own cluster; '' for none. */
  localClusterName: string;
}

const read = new WeakMap<JsonObject, NodeSettings>();
const NO_BOOTSTRAP: JsonObject = Object.freeze({});

export function nodeSettings(bootstrap: JsonObject | null | undefined): NodeSettings {
  const key = bootstrap ?? NO_BOOTSTRAP;
  const hit = read.get(key);
  if (hit) return hit;
  const node = objectOf(key.node);
  const settings: NodeSettings = {
    id: stringOr(node.id, ''),
    cluster: stringOr(node.cluster, ''),
    metadata: objectOf(node.metadata),
    locality: objectOf(node.locality),
    extensions: arrayOf(node.extensions),
    clientFeatures: arrayOf(node.client_features),
    listeningAddresses: arrayOf(node.listening_addresses),
    localClusterName: stringOr(objectOf(key.cluster_manager).local_cluster_name, ''),
  };
  read.set(key, settings);
  return settings;
}
