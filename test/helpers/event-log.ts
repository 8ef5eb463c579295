/** Shared pieces for the event-log tests: a small bootstrap and a store on virtual time. */
import { fileURLToPath } from 'node:url';
import { VirtualAction, VirtualTimeScheduler } from 'rxjs';
import { bootstrapLoaded, type JsonObject } from '../../events/index.js';
import { Store } from '../../src/control/store.js';

/** The repository root, from `test/helpers` (tsx) or `dist/test/helpers` (compiled). */
export const repoRoot = fileURLToPath(
  new URL(import.meta.url.includes('/dist/') ? '../../../' : '../../', import.meta.url),
);

function endpoint(ip: string, port: number): JsonObject {
  return { endpoint: { address: { socket_address: { address: ip, port_value: port } } } };
}

/** A static cluster `name` with `hosts` (`ip:port`) and the given merge window. */
export function cluster(name: string, hosts: string[], mergeWindow = '0s'): JsonObject {
  return {
    name,
    common_lb_config: { update_merge_window: mergeWindow },
    load_assignment: {
      cluster_name: name,
      endpoints: [
        {
          lb_endpoints: hosts.map((h) => {
            const [ip, port] = h.split(':');
            return endpoint(ip as string, Number(port));
          }),
        },
      ],
    },
  };
}

export function bootstrapWith(clusters: JsonObject[]): JsonObject {
  return { static_resources: { clusters } };
}

/** A store on virtual time that has folded `bootstrap`; `attach` runs before that, as `startEventLog` does. */
export function virtualStore(
  bootstrap: JsonObject,
  attach?: (store: Store) => void,
): { store: Store; scheduler: VirtualTimeScheduler } {
  const scheduler = new VirtualTimeScheduler(VirtualAction, Number.POSITIVE_INFINITY);
  const store = new Store({ scheduler });
  attach?.(store);
  store.dispatch(bootstrapLoaded({ bootstrap, options: {}, version: 'test', sources: [] }), 'bootstrap');
  return { store, scheduler };
}
