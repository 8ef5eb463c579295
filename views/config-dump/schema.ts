/**
 * What `/config_dump` may hold: each top-level dump's type and fields, and for each repeated
 * field the Any type of its elements and the name `name_regex` matches (what `?resource=` and
 * `mask=` are checked against).
 */
import type { JsonObject } from '../../events/index.js';

const ADMIN = 'type.googleapis.com/envoy.admin.v3.';

/** One repeated field of a dump: the Any type of its elements and the name `name_regex` matches. */
interface RepeatedField {
  element: string;
  nameOf(element: JsonObject): string;
}

/** A top-level dump type: its fields, repeated or not (what `?resource=` may name). */
export interface DumpSchema {
  type: string;
  scalar: readonly string[];
  repeated: Record<string, RepeatedField>;
}

const nested = (element: JsonObject, field: string, name: string): string => {
  const inner = element[field];
  return inner && typeof inner === 'object' && !Array.isArray(inner) ? String(inner[name] ?? '') : '';
};
const ofCluster = (e: JsonObject) => nested(e, 'cluster', 'name');
const ofListener = (e: JsonObject) => nested(e, 'listener', 'name');
const ofRoute = (e: JsonObject) => nested(e, 'route_config', 'name');
const ofEndpoints = (e: JsonObject) => nested(e, 'endpoint_config', 'cluster_name');
const ofName = (e: JsonObject) => String(e.name ?? '');

/** The dumps in the reference's order (alphabetical by component), with their schemas. */
export const SCHEMAS = {
  bootstrap: { type: 'BootstrapConfigDump', scalar: ['bootstrap', 'last_updated'], repeated: {} },
  clusters: {
    type: 'ClustersConfigDump',
    scalar: ['version_info'],
    repeated: {
      static_clusters: { element: 'ClustersConfigDump.StaticCluster', nameOf: ofCluster },
      dynamic_active_clusters: { element: 'ClustersConfigDump.DynamicCluster', nameOf: ofCluster },
      dynamic_warming_clusters: { element: 'ClustersConfigDump.DynamicCluster', nameOf: ofCluster },
    },
  },
  endpoints: {
    type: 'EndpointsConfigDump',
    scalar: [],
    repeated: {
      static_endpoint_configs: { element: 'EndpointsConfigDump.StaticEndpointConfig', nameOf: ofEndpoints },
      dynamic_endpoint_configs: { element: 'EndpointsConfigDump.DynamicEndpointConfig', nameOf: ofEndpoints },
    },
  },
  listeners: {
    type: 'ListenersConfigDump',
    scalar: ['version_info'],
    repeated: {
      static_listeners: { element: 'ListenersConfigDump.StaticListener', nameOf: ofListener },
      dynamic_listeners: { element: 'ListenersConfigDump.DynamicListener', nameOf: ofName },
    },
  },
  route_scopes: {
    type: 'ScopedRoutesConfigDump',
    scalar: [],
    repeated: {
      inline_scoped_route_configs: {
        element: 'ScopedRoutesConfigDump.InlineScopedRouteConfigs',
        nameOf: ofName,
      },
      dynamic_scoped_route_configs: {
        element: 'ScopedRoutesConfigDump.DynamicScopedRouteConfigs',
        nameOf: ofName,
      },
    },
  },
  routes: {
    type: 'RoutesConfigDump',
    scalar: [],
    repeated: {
      static_route_configs: { element: 'RoutesConfigDump.StaticRouteConfig', nameOf: ofRoute },
      dynamic_route_configs: { element: 'RoutesConfigDump.DynamicRouteConfig', nameOf: ofRoute },
    },
  },
  secrets: {
    type: 'SecretsConfigDump',
    scalar: [],
    repeated: {
      static_secrets: { element: 'SecretsConfigDump.StaticSecret', nameOf: ofName },
      dynamic_active_secrets: { element: 'SecretsConfigDump.DynamicSecret', nameOf: ofName },
      dynamic_warming_secrets: { element: 'SecretsConfigDump.DynamicSecret', nameOf: ofName },
    },
  },
} satisfies Record<string, DumpSchema>;

export type DumpKey = keyof typeof SCHEMAS;

/** One top-level dump before masks: its schema and its fields (repeated ones as lists). */
export interface Dump {
  key: DumpKey;
  schema: DumpSchema;
  fields: JsonObject;
}

export const typeUrl = (name: string) => `${ADMIN}${name}`;
