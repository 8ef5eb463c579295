/**
 * A delta (incremental) discovery response, decoded: each `Resource` wrapper's `Any` through
 * the same decode and compile steps as a state-of-the-world resource, its name checked
 * against the wrapper's, its version kept; `removed_resources` read as names. Nothing in it
 * is trusted: a finding anywhere rejects the response whole, as in state of the world.
 */
import type { JsonObject } from '../../../events/config.js';
import type { WalkContext } from '../../bootstrap/walk-context.js';
import { NO_SECRETS, type Secrets } from '../../config/secrets.js';
import { type DecodedResponse, decodeResources, emptyResponse, isObject, shapeOf } from './resources.js';
import { RESOURCE_NAME, type ResourceKind, type WireResource } from './types.js';

export interface DecodedDelta extends DecodedResponse {
  /** The version of each resource that compiled, by name (`Resource.version`). */
  versions: Map<string, string>;
  /** `removed_resources`: the names the server no longer has. */
  removed: string[];
}

/** What is wrong with the shape of a DeltaDiscoveryResponse, before any resource is read; null when nothing. */
function deltaShapeError(response: unknown): string | null {
  if (!isObject(response)) return `DeltaDiscoveryResponse: is ${shapeOf(response)}, not an object`;
  const { system_version_info: version, resources, removed_resources: removed } = response;
  if (version !== undefined && typeof version !== 'string')
    return `system_version_info: is ${shapeOf(version)}, not a string`;
  if (resources !== undefined && !Array.isArray(resources))
    return `resources: is ${shapeOf(resources)}, not a list`;
  if (removed !== undefined && !Array.isArray(removed))
    return `removed_resources: is ${shapeOf(removed)}, not a list`;
  const badName = (removed ?? []).findIndex((n) => typeof n !== 'string' || n === '');
  if (badName >= 0) return `removed_resources[${badName}]: is not a resource name`;
  const bad = (resources ?? []).findIndex((r) => !isObject(r));
  return bad < 0 ? null : `resources[${bad}]: is ${shapeOf((resources ?? [])[bad])}, not a Resource`;
}

/** The findings of one wrapper that name no field of its resource: its name, version and `Any`. */
function wrapperErrors(kind: ResourceKind, wrapper: JsonObject, index: number): string[] {
  const label = `${RESOURCE_NAME[kind]} #${index}`;
  if (typeof wrapper.name !== 'string' || wrapper.name === '')
    return [`${label}: name: required field missing (a delta Resource is named)`];
  if (wrapper.version !== undefined && typeof wrapper.version !== 'string')
    return [`${label}: version: is ${shapeOf(wrapper.version)}, not a string`];
  if (!isObject(wrapper.resource))
    return [`${RESOURCE_NAME[kind]} '${wrapper.name}': resource: required field missing`];
  return [];
}

/**
 * Decodes a whole DeltaDiscoveryResponse as a stream received it: its shape, then each
 * resource; a resource whose name differs from its wrapper's, a name given twice, or a name
 * both sent and removed is a finding.
 */
export function decodeDeltaUpdate(
  kind: ResourceKind,
  response: unknown,
  walk: Omit<WalkContext, 'report'>,
  secrets: Secrets = NO_SECRETS,
  clusters?: ReadonlySet<string>,
): DecodedDelta {
  const out: DecodedDelta = { ...emptyResponse(''), versions: new Map(), removed: [] };
  const shape = deltaShapeError(response);
  if (shape !== null) return { ...out, errors: [shape] };
  const body = response as JsonObject;
  out.version = typeof body.system_version_info === 'string' ? body.system_version_info : '';
  out.removed = (body.removed_resources ?? []) as string[];
  const typeUrl = typeof body.type_url === 'string' ? body.type_url : '';
  const wrappers = (body.resources ?? []) as JsonObject[];
  const names = new Set<string>();
  wrappers.forEach((wrapper, index) => {
    const errors = wrapperErrors(kind, wrapper, index);
    const name = String(wrapper.name ?? '');
    if (errors.length === 0 && names.has(name))
      errors.push(`${RESOURCE_NAME[kind]} '${name}': name: duplicate in one response`);
    if (errors.length === 0 && out.removed.includes(name))
      errors.push(`${RESOURCE_NAME[kind]} '${name}': both sent and in removed_resources`);
    names.add(name);
    if (errors.length > 0) {
      out.rejected.push({ name: name || `#${index}`, errors });
      return;
    }
    const one = decodeResources(
      kind,
      [wrapper.resource as unknown as WireResource],
      walk,
      secrets,
      typeUrl,
      clusters,
      index,
    );
    out.unknownFields += one.unknownFields;
    out.warnings.push(...one.warnings);
    out.rejected.push(...one.rejected);
    const decoded = one.resources[0];
    if (!decoded) return;
    if (decoded.name !== name) {
      out.rejected.push({
        name,
        errors: [
          `${RESOURCE_NAME[kind]} '${name}': its resource is named '${decoded.name}', not its Resource's name`,
        ],
      });
      return;
    }
    out.resources.push(decoded);
    out.versions.set(name, typeof wrapper.version === 'string' ? wrapper.version : '');
  });
  return out;
}
