import type { JsonObject } from '../../events/index.js';
import type { State } from '../../reducers/state.js';
import { LazyList, madeWhole } from '../lazy-list.js';
import { omitDefaults } from '../proto-json.js';
import { type StreamedResult, streamedProtoJson, text } from '../result.js';
import { applyMask } from './mask.js';
import { type Dump, typeUrl } from './schema.js';
import { selectDumps } from './select.js';

/** `/config_dump` parameters once parsed. */
export interface ConfigDumpParams {
  includeEds: boolean;
  /** FieldMask paths (`mask=a.b,c`), or null for whole messages. */
  mask: string[] | null;
  /** A repeated field of some top-level dump, or null. */
  resource: string | null;
  /** Keeps resources whose name matches (compiled by the caller), or null for all. */
  nameMatches: ((name: string) => boolean) | null;
}

function resourceElements(dumps: Dump[], resource: string, mask: string[] | null): StreamedResult {
  if (dumps.some((d) => d.schema.scalar.includes(resource)))
    return text(`${resource} is not a repeated field. Use ?mask=${resource} to get only this field\n`, 400);
  // each repeated field belongs to one dump
  const owner = dumps.find((d) => resource in d.schema.repeated);
  if (!owner) return text(`${resource} not found in config dump\n`, 404);
  const element = owner.schema.repeated[resource]!.element;
  const pack = (e: JsonObject): JsonObject => {
    const packed: JsonObject = { '@type': typeUrl(element), ...e };
    return mask ? applyMask(packed, mask) : packed;
  };
  const list: unknown = owner.fields[resource] ?? [];
  const configs =
    list instanceof LazyList
      ? (list as LazyList<unknown, JsonObject>).map(pack)
      : (list as JsonObject[]).map(pack);
  return streamedProtoJson({ configs });
}

/**
 * `/config_dump`: `{ configs: [Any...] }`, one Any per top-level dump (default-valued fields
 * omitted, secrets redacted); `mask` trims each dump; `resource` lists the elements of one
 * repeated field instead, each trimmed by `mask`; `name_regex` keeps matching resources.
 * The body is streamed: 10,000 clusters never sit in memory as one document or a copy.
 */
export function renderConfigDump(state: State, params: ConfigDumpParams): StreamedResult {
  const dumps = selectDumps(state, params.includeEds, params.nameMatches);
  if (params.resource !== null) return resourceElements(dumps, params.resource, params.mask);
  return streamedProtoJson({ configs: messages(dumps, params.mask) });
}

/** One Any per top-level dump, each trimmed by `mask`. */
function messages(dumps: Dump[], mask: string[] | null): JsonObject[] {
  return dumps.map((d) => {
    const message: JsonObject = { '@type': typeUrl(d.schema.type), ...d.fields };
    return mask ? applyMask(message, mask) : message;
  });
}

/** What `/config_dump` prints with no parameters, as data. */
export function configDumpData(state: State): { configs: JsonObject[] } {
  return omitDefaults({
    configs: madeWhole(messages(selectDumps(state, false, null), null)) as JsonObject[],
  });
}
