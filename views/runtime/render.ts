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
  const entries: Record<string, { final_value: string; layer_values: string[] }> = {};
  for (const key of keys) {
    const layerValues = layers.map((l) => l.values[key] ?? '');
    entries[key] = { final_value: layerValues.findLast((v) => v !== '') ?? '', layer_values: layerValues };
  }
  return { layers: layers.map((l) => l.name), entries };
}
