/**
 * A discovery response's resources, decoded and compiled by the same steps as static
 * config: each `Any` is decoded by its type URL, walked into the canonical form, then run
 * through its kind's compile function. Findings name the resource and the field.
 */
import type { JsonObject } from '../../../events/config.js';
import { canonicalMessage } from '../../bootstrap/canonical.js';
import { messageToJson } from '../../bootstrap/decode.js';
import { unknownField } from '../../bootstrap/field-lookup.js';
import { nestedTooDeep, TOO_DEEP } from '../../bootstrap/nesting.js';
import { Report } from '../../bootstrap/report.js';
import { isV3TypeUrl, nameOf, typeForUrl } from '../../bootstrap/schema.js';
import type { WalkContext } from '../../bootstrap/walk-context.js';
import { unknownWireFields } from '../../bootstrap/wire-unknown.js';
import { compileCluster } from '../../config/cluster.js';
import { compileListener } from '../../config/listener.js';
import { compileClusterLoadAssignment } from '../../config/load-assignment.js';
import { checkRouteClusters, inlineRouteConfigs } from '../../config/route-clusters.js';
import { compileRouteConfiguration } from '../../config/route-configuration.js';
import { compileSecret } from '../../config/secret.js';
import { NO_SECRETS, type Secrets } from '../../config/secrets.js';
import { kindOfTypeUrl, MESSAGE_OF, RESOURCE_NAME, type ResourceKind, type WireResource } from './types.js';

export interface DecodedResource {
  name: string;
  config: JsonObject;
}

export interface DecodedResponse {
  /** `version_info` as a string ('' when absent). */
  version: string;
  /** Findings about the response itself (its shape), which name no resource. */
  errors: string[];
  /** Resources that compiled, in response order. */
  resources: DecodedResource[];
  /** Resources that did not: their names (`#<index>` when not even the name was read) and findings. */
  rejected: Array<{ name: string; errors: string[] }>;
  /** Unknown fields let through (without `--reject-unknown-dynamic-fields`), and their warnings. */
  unknownFields: number;
  warnings: string[];
}

/** The name field of each kind (a ClusterLoadAssignment is named by `cluster_name`). */
function nameOfResource(kind: ResourceKind, config: JsonObject): string {
  const name = kind === 'eds' ? config.cluster_name : config.name;
  return typeof name === 'string' ? name : '';
}

function compile(
  kind: ResourceKind,
  config: JsonObject,
  report: Report,
  secrets: Secrets,
  clusters: ReadonlySet<string> | undefined,
): void {
  switch (kind) {
    case 'eds':
      // The reference resolves EDS endpoints without DNS too: a host name is NACKed.
      compileClusterLoadAssignment(config, '', { report, ipOnly: true });
      return;
    case 'cds':
      compileCluster(config, '', { report, secrets });
      return;
    case 'lds':
      compileListener(config, '', { report, secrets });
      if (clusters)
        for (const table of inlineRouteConfigs(config, ''))
          checkRouteClusters(table.config, table.path, report, clusters, true);
      return;
    case 'rds':
      compileRouteConfiguration(config, '', { report });
      if (clusters) checkRouteClusters(config, '', report, clusters, false);
      return;
    case 'sds':
      compileSecret(config, '', { report });
      return;
  }
}

function isWire(resource: object): resource is WireResource {
  return (resource as { value?: unknown }).value instanceof Uint8Array;
}

export const isObject = (value: unknown): value is JsonObject =>
  typeof value === 'object' && value !== null && !Array.isArray(value);

export const shapeOf = (value: unknown): string =>
  value === null ? 'null' : Array.isArray(value) ? 'a list' : `a ${typeof value}`;

/**
 * What is wrong with the shape of a DiscoveryResponse, before any resource is read: null when
 * it is an object whose `version_info` is a string (or absent) and whose `resources` is a list
 * (or absent) of objects. A file source counts such a content as one that did not parse.
 */
export function responseShapeError(response: unknown): string | null {
  // A REST body that is not JSON arrives as the SyntaxError of its parse.
  if (response instanceof Error) return `DiscoveryResponse: not JSON: ${response.message}`;
  if (!isObject(response)) return `DiscoveryResponse: is ${shapeOf(response)}, not an object`;
  const { version_info: version, resources, type_url: typeUrl } = response;
  if (version !== undefined && typeof version !== 'string')
    return `version_info: is ${shapeOf(version)}, not a string`;
  if (typeUrl !== undefined && typeof typeUrl !== 'string')
    return `type_url: is ${shapeOf(typeUrl)}, not a string`;
  if (resources === undefined) return null;
  if (!Array.isArray(resources)) return `resources: is ${shapeOf(resources)}, not a list`;
  const bad = resources.findIndex((r) => !isObject(r));
  return bad < 0 ? null : `resources[${bad}]: is ${shapeOf(resources[bad])}, not an Any`;
}

/**
 * Decodes a whole DiscoveryResponse as a transport received it, nothing in it trusted: its
 * shape first (a finding there names no resource), then each resource. The message-wide
 * `type_url`, when given, must be every resource's, as the reference checks.
 */
export function decodeUpdate(
  kind: ResourceKind,
  response: unknown,
  walk: Omit<WalkContext, 'report'>,
  secrets: Secrets = NO_SECRETS,
  /** The clusters known now, which route tables with `validate_clusters` are checked against. */
  clusters?: ReadonlySet<string>,
): DecodedResponse {
  const shape = responseShapeError(response);
  if (shape !== null) return { ...emptyResponse(''), errors: [shape] };
  const { version_info: version = '', resources = [], type_url: typeUrl = '' } = response as JsonObject;
  const out = decodeResources(kind, resources as JsonObject[], walk, secrets, typeUrl as string, clusters);
  return { ...out, version: version as string };
}

export function emptyResponse(version: string): DecodedResponse {
  return { version, errors: [], resources: [], rejected: [], unknownFields: 0, warnings: [] };
}

function withoutType(resource: JsonObject): JsonObject {
  const { '@type': _, ...rest } = resource;
  return rest;
}

/**
 * Decodes and compiles the resources of one response: `Any`s off the wire, or their proto3
 * JSON form (`{ "@type": url, ...fields }`) from a file source.
 */
export function decodeResources(
  kind: ResourceKind,
  resources: ReadonlyArray<WireResource | JsonObject>,
  walk: Omit<WalkContext, 'report'>,
  /** The bootstrap's static secrets, which a discovered TLS context may name. */
  secrets: Secrets = NO_SECRETS,
  /** The response's own `type_url` ('' when it has none, as in a file). */
  typeUrl = '',
  /** The clusters known now, which route tables with `validate_clusters` are checked against. */
  clusters?: ReadonlySet<string>,
  /** The index of the first resource in its response, which findings name (`#<index>`). */
  firstIndex = 0,
): DecodedResponse {
  const out = emptyResponse('');
  const seen = new Set<string>();
  resources.forEach((resource, at) => {
    const index = firstIndex + at;
    const report = new Report(`${RESOURCE_NAME[kind]} #${index}`);
    const url = isWire(resource) ? resource.type_url : resource['@type'];
    const type = typeof url === 'string' ? typeForUrl(url) : undefined;
    if (
      typeof url !== 'string' ||
      kindOfTypeUrl(url) !== kind ||
      !type ||
      nameOf(type) !== `.${MESSAGE_OF[kind]}`
    ) {
      const what =
        typeof url === 'string' ? url : `(${isWire(resource) ? 'type_url' : '@type'} is ${shapeOf(url)})`;
      report.error('', `type_url ${what} is not a ${RESOURCE_NAME[kind]}`);
      out.rejected.push({ name: `#${index}`, errors: report.errors });
      return;
    }
    if (typeUrl !== '' && url !== typeUrl) {
      report.error('', `type_url ${url} does not match the response's type_url ${typeUrl}`);
      out.rejected.push({ name: `#${index}`, errors: report.errors });
      return;
    }
    let config: JsonObject | undefined;
    try {
      const json = isWire(resource)
        ? messageToJson(type, type.decode(resource.value) as unknown as Record<string, unknown>)
        : withoutType(resource);
      if (!isObject(json)) throw new Error(`is ${shapeOf(json)}, not a message`);
      const deep = nestedTooDeep(json);
      if (deep !== null) throw new Error(`${deep}: ${TOO_DEEP}`);
      const ctx = { ...walk, report, v3: isV3TypeUrl(url) };
      config = canonicalMessage(json, type, '', ctx);
      if (isWire(resource))
        for (const u of unknownWireFields(type, resource.value))
          unknownField(ctx, u.path ? `${u.path}.${u.key}` : u.key, u.key, u.type);
    } catch (err) {
      report.error('', `cannot decode: ${(err as Error).message}`);
    }
    const name = config ? nameOfResource(kind, config) : '';
    if (name) report.label = `${RESOURCE_NAME[kind]} '${name}'`;
    if (config && !name)
      report.error(kind === 'eds' ? 'cluster_name' : 'name', 'required field missing', 'missing');
    if (name && seen.has(name))
      report.error('name', `duplicate ${RESOURCE_NAME[kind]} '${name}' in one response`);
    seen.add(name);
    if (config && name) {
      try {
        compile(kind, config, report, secrets, clusters);
      } catch (err) {
        // A compile step that throws on input it did not foresee is a finding, never a crash.
        report.error('', `cannot compile: ${(err as Error).message}`);
      }
    }
    // The compile steps join paths as `${base}.field`; a resource is its own base here.
    for (const problem of report.problems) problem.path = problem.path.replace(/^\./, '');
    out.unknownFields += report.unknownFields;
    out.warnings.push(...report.warnings);
    if (config && !report.failed) out.resources.push({ name, config });
    else out.rejected.push({ name: name || `#${index}`, errors: report.errors });
  });
  return out;
}
