/**
 * A discovery response's resources, decoded and compiled by the same steps as static
 * config: each `Any` is decoded by its type URL, walked into the canonical form, then run
 * through its kind's compile function. Findings name the resource and the field.
 */
import type { JsonObject } from '../../events/config.js';
import { canonicalMessage, type WalkContext } from '../bootstrap/canonical.js';
import { messageToJson } from '../bootstrap/decode.js';
import { Report } from '../bootstrap/report.js';
import { nameOf, typeForUrl } from '../bootstrap/schema.js';
import { checkLoadAssignment, validateCluster } from '../bootstrap/validate-cluster.js';
import { compileListener } from '../dataplane/listeners/config.js';
import { compileRouteTable } from '../dataplane/router/table.js';
import { NO_SECRETS, type Secrets } from '../tls/secrets.js';
import { kindOfTypeUrl, MESSAGE_OF, RESOURCE_NAME, type ResourceKind, type WireResource } from './types.js';

export interface DecodedResource {
  name: string;
  config: JsonObject;
}

export interface DecodedResponse {
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

function compile(kind: ResourceKind, config: JsonObject, report: Report, secrets: Secrets): void {
  switch (kind) {
    case 'eds':
      checkLoadAssignment(config, '', report);
      return;
    case 'cds':
      validateCluster(config, '', report, secrets);
      return;
    case 'lds':
      compileListener(config, '', report, secrets);
      return;
    case 'rds':
      compileRouteTable(config, '', report);
      return;
  }
}

function isWire(resource: WireResource | JsonObject): resource is WireResource {
  return resource.value instanceof Uint8Array;
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
): DecodedResponse {
  const out: DecodedResponse = { resources: [], rejected: [], unknownFields: 0, warnings: [] };
  const seen = new Set<string>();
  resources.forEach((resource, index) => {
    const report = new Report(`${RESOURCE_NAME[kind]} #${index}`);
    const url = isWire(resource) ? resource.type_url : String(resource['@type'] ?? '');
    const type = typeForUrl(url);
    if (kindOfTypeUrl(url) !== kind || !type || nameOf(type) !== `.${MESSAGE_OF[kind]}`) {
      report.error('', `type_url ${url} is not a ${RESOURCE_NAME[kind]}`);
      out.rejected.push({ name: `#${index}`, errors: report.errors });
      return;
    }
    let config: JsonObject | undefined;
    try {
      const json = isWire(resource)
        ? messageToJson(type, type.decode(resource.value) as unknown as Record<string, unknown>)
        : withoutType(resource);
      config = canonicalMessage(json, type, '', { ...walk, report });
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
    if (config && name) compile(kind, config, report, secrets);
    // The compile steps join paths as `${base}.field`; a resource is its own base here.
    for (const problem of report.problems) problem.path = problem.path.replace(/^\./, '');
    out.unknownFields += report.unknownFields;
    out.warnings.push(...report.warnings);
    if (config && !report.failed) out.resources.push({ name, config });
    else out.rejected.push({ name: name || `#${index}`, errors: report.errors });
  });
  return out;
}
