import { readdirSync, statSync } from 'node:fs';
import { join } from 'node:path';
import type { JsonObject } from '../../events/index.js';
import { runtimeLayerLoaded } from '../../events/index.js';
import { stringOr } from '../../reducers/settings/values.js';
import { readNamedFile } from '../bootstrap/read-file.js';
import type { Core } from '../core.js';

/** A disk layer's name in the runtime stack and the directory its keys come from. */
export interface DiskLayerSource {
  layer: string;
  directory: string;
}

/**
 * Directories of the disk layers a bootstrap declares: `layered_runtime.layers[].disk_layer`
 * (`symlink_root/subdirectory`, plus the service cluster with `append_service_cluster`), or
 * the deprecated `runtime` block's `root` and `override` layers.
 */
export function diskLayerSources(bootstrap: JsonObject, serviceCluster: string): DiskLayerSource[] {
  const layered = bootstrap.layered_runtime as { layers?: JsonObject[] } | undefined;
  if (layered) {
    return (layered.layers ?? []).flatMap((layer) => {
      const disk = layer.disk_layer as JsonObject | undefined;
      if (!disk) return [];
      const parts = [stringOr(disk.symlink_root, ''), stringOr(disk.subdirectory, '')];
      if (disk.append_service_cluster === true) parts.push(serviceCluster);
      return [{ layer: stringOr(layer.name, ''), directory: join(...parts.filter(Boolean)) }];
    });
  }
  const runtime = bootstrap.runtime as JsonObject | undefined;
  const root = stringOr(runtime?.symlink_root, '');
  if (!runtime || !root) return [];
  const out = [{ layer: 'root', directory: join(root, stringOr(runtime.subdirectory, '')) }];
  if (runtime.override_subdirectory)
    out.push({ layer: 'override', directory: join(root, stringOr(runtime.override_subdirectory, '')) });
  return out;
}

/** The reference's limit on a disk layer's depth; deeper (a symlink loop) fails the layer. */
const MAX_WALK_DEPTH = 16;

/** Every file under `directory` as a runtime key (`a/b/c` -> `a.b.c`) with its trimmed contents. */
export async function readRuntimeTree(directory: string): Promise<Record<string, string>> {
  const values: Record<string, string> = {};
  walk(directory, '', 1, values);
  return values;
}

/**
 * Walks a layer as the reference's `DiskLayer` does: each entry taken for what `stat` says,
 * so a symbolic link counts as what it points at (a Kubernetes ConfigMap volume links every
 * key into `..data`), a directory deeper than 16 levels (a link to its own parent) fails the
 * layer, and a file is read as `readNamedFile` reads (never a device or a FIFO).
 */
function walk(directory: string, prefix: string, depth: number, values: Record<string, string>): void {
  if (depth > MAX_WALK_DEPTH) throw new Error(`Walk recursion depth exceeded ${MAX_WALK_DEPTH}`);
  for (const name of readdirSync(directory)) {
    const full = join(directory, name);
    const key = prefix ? `${prefix}.${name}` : name;
    const entry = statSync(full, { throwIfNoEntry: false });
    if (entry?.isDirectory()) walk(full, key, depth + 1, values);
    else if (entry?.isFile()) values[key] = readNamedFile(full).toString('utf8').trimEnd();
  }
}

/**
 * Reads each disk layer once, at start-up, and dispatches `runtime/layer-loaded` for it. A
 * missing directory leaves the layer empty (the reference tolerates it too) and is logged.
 */
export async function loadDiskRuntimeLayers(ctx: Pick<Core, 'options' | 'store' | 'log'>): Promise<void> {
  const bootstrap = ctx.store.state.bootstrap?.config;
  if (!bootstrap) return;
  const serviceCluster =
    ctx.options.serviceCluster || stringOr((bootstrap.node as JsonObject | undefined)?.cluster, '');
  for (const source of diskLayerSources(bootstrap, serviceCluster)) {
    try {
      const values = await readRuntimeTree(source.directory);
      ctx.store.dispatch(runtimeLayerLoaded({ layer: source.layer, values }), 'runtime-disk');
    } catch (err) {
      ctx.log
        .get('runtime')
        .warn(
          { err, directory: source.directory },
          `runtime disk layer '${source.layer}' not read; it stays empty`,
        );
    }
  }
}
