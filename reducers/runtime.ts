import type { Draft } from 'immer';
import type { Json, JsonObject } from '../events/index.js';
import { entryOf, withEntry } from './names.js';
import type { On } from './on.js';
import type { RuntimeLayer, State } from './state.js';

/** Flattens a static layer Struct into runtime keys: `{a: {b: 1}}` -> `a.b = "1"`. */
export function flattenLayer(
  value: Json,
  prefix = '',
  out: Record<string, string> = {},
): Record<string, string> {
  if (value !== null && typeof value === 'object' && !Array.isArray(value)) {
    let all = out;
    for (const [key, inner] of Object.entries(value))
      all = flattenLayer(inner, prefix ? `${prefix}.${key}` : key, all);
    return all;
  }
  if (!prefix) return out;
  return withEntry(out, prefix, typeof value === 'string' ? value : JSON.stringify(value));
}

/**
 * The layer stack a bootstrap declares: `layered_runtime.layers` in order; the deprecated
 * `runtime` block as `base`, `root`, `override`, `admin`; neither, `base` and `admin`.
 */
export function layersOf(bootstrap: JsonObject): RuntimeLayer[] {
  const layered = bootstrap.layered_runtime as { layers?: JsonObject[] } | undefined;
  if (layered) {
    const layers = (layered.layers ?? []).map((layer): RuntimeLayer => {
      const name = typeof layer.name === 'string' ? layer.name : '';
      if (layer.static_layer !== undefined)
        return {
          name,
          kind: 'static',
          values: flattenLayer(layer.static_layer),
        };
      if (layer.disk_layer !== undefined) return { name, kind: 'disk', values: {} };
      return { name, kind: 'admin', values: {} };
    });
    return layers.length > 0 ? layers : [{ name: '', kind: 'admin', values: {} }];
  }
  const runtime = bootstrap.runtime as JsonObject | undefined;
  if (runtime) {
    const layers: RuntimeLayer[] = [
      {
        name: 'base',
        kind: 'static',
        values: flattenLayer(runtime.base ?? {}),
      },
    ];
    if (runtime.symlink_root) layers.push({ name: 'root', kind: 'disk', values: {} });
    if (runtime.override_subdirectory) layers.push({ name: 'override', kind: 'disk', values: {} });
    layers.push({ name: 'admin', kind: 'admin', values: {} });
    return layers;
  }
  return [
    { name: 'base', kind: 'static', values: {} },
    { name: 'admin', kind: 'admin', values: {} },
  ];
}

export function runtimeFromBootstrap(draft: Draft<State>, env: On<'server/bootstrap-loaded'>): void {
  draft.runtime.layers = layersOf(env.event.bootstrap);
}

export function onRuntimeModified(draft: Draft<State>, env: On<'runtime/modified'>): void {
  const admin = draft.runtime.layers.findLast((layer) => layer.kind === 'admin');
  if (!admin) return;
  for (const [key, value] of Object.entries(env.event.values)) {
    if (value !== '') admin.values = withEntry(admin.values, key, value);
    else if (Object.hasOwn(admin.values, key)) delete admin.values[key];
  }
}

export function onRuntimeLayerLoaded(draft: Draft<State>, env: On<'runtime/layer-loaded'>): void {
  const layer = draft.runtime.layers.find((l) => l.name === env.event.layer && l.kind === 'disk');
  if (layer) layer.values = env.event.values;
}

/** The value a key resolves to through the stack: the last layer that holds it wins. */
export function runtimeValue(state: State, key: string): string | undefined {
  let value: string | undefined;
  for (const layer of state.runtime.layers) {
    const v = entryOf(layer.values, key);
    if (v !== undefined) value = v;
  }
  return value;
}
