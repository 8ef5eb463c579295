import { defineEvent } from './define.js';

/**
 * `POST /runtime_modify`: values for the admin layer; an empty string removes a key the
 * admin layer holds.
 */
export const runtimeModified = defineEvent('runtime/modified').withPayload<{
  values: Record<string, string>;
}>();

/** A disk layer (re)read by the edge that watches its directory. */
export const runtimeLayerLoaded = defineEvent('runtime/layer-loaded').withPayload<{
  layer: string;
  values: Record<string, string>;
}>();
