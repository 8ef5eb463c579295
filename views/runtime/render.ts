import { entryOf } from '../../reducers/names.js';
import type { State } from '../../reducers/state.js';
import { json, type ViewResult } from '../result.js';

/**
 * `/runtime`: the layers in stack order, and per key (sorted) its value in each layer (`""`
 * where the layer has none) and the value the stack resolves to (the last layer holding it).
 */
export function renderRuntime(state: State): ViewResult {
  return json(runtimeData(state));
}

/** What `/runtime` prints, as data. */
export function runtimeData(state: State): {
  layers: string[];
  entries: Record<string, { final_value: string; layer_values: string[] }>;
} {
  const layers = state.runtime.layers;
  const keys = [...new Set(layers.flatMap((l) => Object.keys(l.values)))].sort();
  // No prototype: a key named `__proto__` is an entry like any other, not the object's prototype.
  const entries: Record<string, { final_value: string; layer_values: string[] }> = Object.create(null);
  for (const key of keys) {
    // Own values only: a layer without `toString` has none, not Object.prototype's.
    const layerValues = layers.map((l) => entryOf(l.values, key) ?? '');
    entries[key] = { final_value: layerValues.findLast((v) => v !== '') ?? '', layer_values: layerValues };
  }
  return { layers: layers.map((l) => l.name), entries };
}
