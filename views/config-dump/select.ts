import type { Json, JsonObject } from '../../events/index.js';
import { edsServiceName } from '../../reducers/discovery.js';
import { entryOf } from '../../reducers/names.js';
import type { ClusterEntry, ListenerEntry, State } from '../../reducers/state.js';
import { LazyList, lazyList } from '../lazy-list.js';
import { omitDefaults, socketAddress, timestamp } from '../proto-json.js';
import { redact } from '../redact.js';
import { apiVersions, asV3 } from './api-version.js';
import { type Dump, type DumpKey, type DumpSchema, SCHEMAS } from './schema.js';

/** Resources are held in their canonical v2 form: `any` shows those that came in as v3 as v3. */
const V2 = 'type.googleapis.com/envoy.api.v2.';

/**
 * `source` made into dump elements as they are written (see `LazyList`): each cluster is
 * redacted when its turn comes, not all of them before the first byte. Typed as the JSON it
 * writes as; only `jsonChunks`, `applyMask` and `madeWhole` read dumps.
 */
const each = <S>(source: readonly S[], make: (s: S) => JsonObject): Json =>
  lazyList(source, make) as unknown as Json;

/** A resource as an Any: in its v2 canonical form, or as v3 when it came in as v3 (`api-version.ts`). */
const any = (type: string, message: Json, v3 = false): JsonObject => {
  const packed: JsonObject = { '@type': `${V2}${type}`, ...(redact(message) as JsonObject) };
  return v3 ? (asV3(packed) as JsonObject) : packed;
};

function byName<T extends { name: string }>(items: readonly T[]): T[] {
  return [...items].sort((a, b) => (a.name < b.name ? -1 : a.name > b.name ? 1 : 0));
}

/** A cluster's members as a ClusterLoadAssignment: one locality group per (locality, priority). */
function loadAssignment(entry: ClusterEntry): JsonObject {
  const groups = new Map<string, { locality: JsonObject; priority: number; lb_endpoints: Json[] }>();
  for (const h of entry.hosts) {
    const key = JSON.stringify([h.locality, h.priority]);
    let group = groups.get(key);
    if (!group) {
      group = { locality: { ...h.locality }, priority: h.priority, lb_endpoints: [] };
      groups.set(key, group);
    }
    group.lb_endpoints.push({
      endpoint: { address: socketAddress(h.address), hostname: h.hostname },
      health_status: h.edsHealth === 'UNKNOWN' ? '' : h.edsHealth,
      metadata: Object.keys(h.metadata).length > 0 ? { filter_metadata: h.metadata } : {},
      load_balancing_weight: h.weight,
    });
  }
  return omitDefaults({ cluster_name: entry.name, endpoints: [...groups.values()] });
}

/** Inline route tables of a listener's HTTP connection managers (`route_config` at any depth). */
function routeConfigs(value: Json, out: JsonObject[] = []): JsonObject[] {
  if (Array.isArray(value)) for (const v of value) routeConfigs(v, out);
  else if (value !== null && typeof value === 'object') {
    for (const [key, inner] of Object.entries(value)) {
      if (key === 'route_config' && inner !== null && typeof inner === 'object' && !Array.isArray(inner))
        out.push(inner);
      else routeConfigs(inner, out);
    }
  }
  return out;
}

/** One field of a redacted object: the policy depends on the field's name, so it is redacted in its place. */
const redactedField = (key: string, value: Json): Json =>
  (redact({ [key]: value }) as JsonObject)[key] as Json;

/** The fields of `static_resources` that may hold thousands of resources (none is a secret's name). */
const RESOURCE_LISTS = new Set(['clusters', 'listeners']);

/**
 * `redact(config)` (as v3 when written in v3), with the resource lists of `static_resources`
 * redacted element by element as they are written (the bootstrap of 10,000 clusters is not
 * copied whole).
 */
function redactedBootstrap(config: JsonObject, v3: boolean): JsonObject {
  const shown = (key: string, value: Json): Json => (v3 ? asV3(value, key) : value);
  return Object.fromEntries(
    Object.entries(config).map(([key, value]): [string, Json] => {
      if (key !== 'static_resources' || value === null || typeof value !== 'object' || Array.isArray(value))
        return [key, shown(key, redactedField(key, value))];
      const resources = Object.entries(value).map(([field, inner]): [string, Json] => [
        field,
        RESOURCE_LISTS.has(field) && Array.isArray(inner)
          ? each(inner, (r) => shown(field, redact(r)) as JsonObject)
          : shown(field, redactedField(field, inner)),
      ]);
      return [key, Object.fromEntries(resources)];
    }),
  );
}

function bootstrapDump(state: State): JsonObject {
  if (!state.bootstrap) return {};
  return {
    bootstrap: redactedBootstrap(state.bootstrap.config, state.bootstrap.apiVersion === 'V3'),
    last_updated: timestamp(state.bootstrap.lastUpdated),
  };
}

type Rejection = State['rejected'][number];

/** The last rejected update of each resource of one type (`Cluster`, `Listener`, ...), by name. */
function lastRejections(state: State, resource: string): Map<string, Rejection> {
  const out = new Map<string, Rejection>();
  for (const r of state.rejected) if (r.resource === resource && r.name !== '') out.set(r.name, r);
  return out;
}

/** The reference's `UpdateFailureState`: the last rejection's details, time and version. */
function errorState(failure: Rejection): JsonObject {
  return {
    details: failure.errors.join('; '),
    last_update_attempt: timestamp(failure.at),
    version_info: failure.versionInfo,
  };
}

/** `error_state` of a resource whose last rejection came after its config (none otherwise). */
function withError(entry: JsonObject, failure: Rejection | undefined, lastUpdated: number): JsonObject {
  return failure && failure.at >= lastUpdated ? { ...entry, error_state: errorState(failure) } : entry;
}

/** Rejected names with no accepted resource of that name: listed with their error alone. */
function onlyRejected(failures: Map<string, Rejection>, known: (name: string) => boolean): Rejection[] {
  return [...failures.values()].filter((f) => !known(f.name)).sort((a, b) => (a.name < b.name ? -1 : 1));
}

function dynamicCluster(c: ClusterEntry, failure: Rejection | undefined, v3: boolean): JsonObject {
  return withError(
    {
      version_info: c.versionInfo,
      cluster: any('Cluster', c.config, v3),
      last_updated: timestamp(c.lastUpdated),
    },
    failure,
    c.lastUpdated,
  );
}

function clustersDump(state: State): JsonObject {
  const clusters = byName(Object.values(state.clusters));
  const version = state.clusterManager.versionInfo;
  const failures = lastRejections(state, 'Cluster');
  const rejectedOnly = onlyRejected(failures, (name) => entryOf(state.clusters, name) !== undefined);
  const versions = apiVersions(state);
  const v3 = versions.clusters;
  return {
    version_info: version === 'static' ? '' : version,
    static_clusters: each(
      clusters.filter((c) => !c.addedViaApi),
      (c) => ({
        cluster: any('Cluster', c.config, versions.bootstrap),
        last_updated: timestamp(c.lastUpdated),
      }),
    ),
    dynamic_active_clusters: each(
      [...clusters.filter((c) => c.addedViaApi && !c.warming), ...rejectedOnly],
      (c) =>
        'config' in c
          ? dynamicCluster(c, failures.get(c.name), v3)
          : { cluster: any('Cluster', { name: c.name }, v3), error_state: errorState(c) },
    ),
    dynamic_warming_clusters: each(
      clusters.filter((c) => c.addedViaApi && c.warming),
      (c) => dynamicCluster(c, failures.get(c.name), v3),
    ),
  };
}

function endpointsDump(state: State): JsonObject {
  const clusters = byName(Object.values(state.clusters));
  const discovered = (c: ClusterEntry) => String(c.config.type ?? '').toUpperCase() === 'EDS';
  const failures = lastRejections(state, 'ClusterLoadAssignment');
  const versions = apiVersions(state);
  return {
    static_endpoint_configs: each(
      clusters.filter((c) => !discovered(c)),
      (c) => ({
        endpoint_config: any(
          'ClusterLoadAssignment',
          loadAssignment(c),
          c.addedViaApi ? versions.clusters : versions.bootstrap,
        ),
        last_updated: timestamp(c.lastUpdated),
      }),
    ),
    dynamic_endpoint_configs: each(clusters.filter(discovered), (c) =>
      withError(
        {
          version_info: c.versionInfo,
          endpoint_config: any('ClusterLoadAssignment', loadAssignment(c), versions.endpoints(c)),
          last_updated: timestamp(c.lastUpdated),
        },
        failures.get(edsServiceName(c.config)),
        c.lastUpdated,
      ),
    ),
  };
}

function listenersDump(state: State): JsonObject {
  const listeners = byName(Object.values(state.listeners));
  const v3 = apiVersions(state).bootstrap;
  return {
    ...(state.discovery.versions.lds !== undefined ? { version_info: state.discovery.versions.lds } : {}),
    static_listeners: each(
      listeners.filter((l) => !l.discovered),
      (l) => ({ listener: any('Listener', l.config, v3), last_updated: timestamp(l.lastUpdated) }),
    ),
    dynamic_listeners: dynamicListeners(state, listeners),
  };
}

/**
 * Discovered listeners in the state they are in, each with the last rejected update of its name
 * (`error_state`) when that came after its config; a listener only ever rejected has only that.
 */
function dynamicListeners(state: State, listeners: ListenerEntry[]): JsonObject[] {
  const failures = lastRejections(state, 'Listener');
  const out = new Map<string, JsonObject>();
  const v3 = apiVersions(state).listeners;
  for (const l of listeners) {
    if (!l.discovered) continue;
    const listener = any('Listener', l.config, v3);
    if (l.state === 'failed') {
      // Accepted, then its bind failed: it serves nothing, as a rejected update would not.
      out.set(l.name, {
        name: l.name,
        error_state: {
          failed_configuration: listener,
          details: l.error ?? 'cannot bind',
          last_update_attempt: timestamp(l.lastUpdated),
          version_info: l.discovered.versionInfo,
        },
      });
      continue;
    }
    const phase =
      l.state === 'pending' ? 'warming_state' : l.state === 'draining' ? 'draining_state' : 'active_state';
    out.set(l.name, {
      name: l.name,
      [phase]: { version_info: l.discovered.versionInfo, listener, last_updated: timestamp(l.lastUpdated) },
    });
  }
  for (const [name, failure] of failures) {
    const listener = entryOf(state.listeners, name);
    if (listener && (!listener.discovered || listener.lastUpdated > failure.at)) continue;
    const entry = out.get(name) ?? { name };
    entry.error_state = errorState(failure);
    out.set(name, entry);
  }
  return [...out.values()].sort((a, b) => (String(a.name) < String(b.name) ? -1 : 1));
}

function routesDump(state: State): JsonObject {
  const failures = lastRejections(state, 'RouteConfiguration');
  const routes = byName(Object.values(state.discovery.routes));
  const versions = apiVersions(state);
  return {
    static_route_configs: byName(Object.values(state.listeners)).flatMap((l) =>
      routeConfigs(l.config).map((rc) => ({
        route_config: any('RouteConfiguration', rc, l.discovered ? versions.listeners : versions.bootstrap),
        last_updated: timestamp(l.lastUpdated),
      })),
    ),
    dynamic_route_configs: [
      ...routes.map((r) =>
        withError(
          {
            version_info: r.versionInfo,
            route_config: any('RouteConfiguration', r.config, versions.route(r.name)),
            last_updated: timestamp(r.lastUpdated),
          },
          failures.get(r.name),
          r.lastUpdated,
        ),
      ),
      ...onlyRejected(failures, (name) => entryOf(state.discovery.routes, name) !== undefined).map((f) => ({
        route_config: any('RouteConfiguration', { name: f.name }, versions.route(f.name)),
        error_state: errorState(f),
      })),
    ],
  };
}

function secretsDump(state: State): JsonObject {
  const resources = (state.bootstrap?.config.static_resources ?? {}) as { secrets?: JsonObject[] };
  const at = timestamp(state.bootstrap?.lastUpdated ?? 0);
  const secretFailures = lastRejections(state, 'Secret');
  const versions = apiVersions(state);
  return {
    static_secrets: (resources.secrets ?? []).map((secret) => ({
      name: String(secret.name ?? ''),
      last_updated: at,
      secret: any('auth.Secret', secret, versions.bootstrap),
    })),
    dynamic_active_secrets: [
      ...byName(Object.values(state.discovery.secrets)).map((s) =>
        withError(
          {
            name: s.name,
            version_info: s.versionInfo,
            last_updated: timestamp(s.lastUpdated),
            secret: any('auth.Secret', s.config, versions.secret(s.name)),
          },
          secretFailures.get(s.name),
          s.lastUpdated,
        ),
      ),
      ...onlyRejected(secretFailures, (name) => entryOf(state.discovery.secrets, name) !== undefined).map(
        (f) => ({ name: f.name, error_state: errorState(f) }),
      ),
    ],
  };
}

const BUILDERS: Record<DumpKey, (state: State) => JsonObject> = {
  bootstrap: bootstrapDump,
  clusters: clustersDump,
  endpoints: endpointsDump,
  listeners: listenersDump,
  route_scopes: () => ({}),
  routes: routesDump,
  secrets: secretsDump,
};

/**
 * Every top-level dump of the snapshot in order (`endpoints` only with `include_eds`),
 * secrets redacted; with `nameMatches`, repeated resources whose name does not match are
 * dropped (the bootstrap is never filtered: it has no name).
 */
export function selectDumps(
  state: State,
  includeEds: boolean,
  nameMatches: ((name: string) => boolean) | null,
): Dump[] {
  const keys = (Object.keys(SCHEMAS) as DumpKey[]).filter((k) => includeEds || k !== 'endpoints');
  return keys.map((key) => {
    const schema: DumpSchema = SCHEMAS[key];
    const fields = BUILDERS[key](state);
    if (nameMatches) {
      for (const [field, spec] of Object.entries(schema.repeated)) {
        const list: unknown = fields[field];
        const keep = (e: JsonObject) => nameMatches(spec.nameOf(e));
        if (list instanceof LazyList) fields[field] = (list as LazyList<unknown, JsonObject>).filter(keep);
        else if (Array.isArray(list)) fields[field] = (list as JsonObject[]).filter(keep);
      }
    }
    return { key, schema, fields };
  });
}
