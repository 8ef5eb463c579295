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

/** A whole YAML bootstrap: an HTTP listener answering 200 directly, and one cluster. */
export const HTTP_BOOTSTRAP_YAML = `
admin:
  address: { socket_address: { address: 127.0.0.1, port_value: 0 } }
static_resources:
  listeners:
    - name: ingress
      address: { socket_address: { address: 127.0.0.1, port_value: 0 } }
      filter_chains:
        - filters:
            - name: proxy.filters.network.http_connection_manager
              typed_config:
                "@type": type.googleapis.com/envoy.config.filter.network.http_connection_manager.v2.HttpConnectionManager
                stat_prefix: ingress_http
                route_config:
                  virtual_hosts:
                    - name: all
                      domains: ["*"]
                      routes:
                        - match: { prefix: "/" }
                          direct_response: { status: 200, body: { inline_string: "hi\\n" } }
                http_filters:
                  - name: proxy.filters.http.router
  clusters:
    - name: svc
      connect_timeout: 0.25s
      load_assignment:
        cluster_name: svc
        endpoints:
          - lb_endpoints:
              - endpoint: { address: { socket_address: { address: 127.0.0.1, port_value: 9 } } }
`;

/** A store on virtual time that has folded `bootstrap`; `attach` runs before that, as `openEventLog` does. */
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

/** A proxy process started from `bin/proxy.js` with its admin address read back. */
export interface SpawnedProxy {
  child: import('node:child_process').ChildProcess;
  admin: string;
  /** Resolves with the exit code (or the signal) once the process is gone. */
  exited: Promise<number | string>;
  stderr(): string;
}

/** Spawns the built proxy (`npm run build` first) and waits until its admin answers. */
export async function spawnProxy(args: string[], adminAddressPath: string): Promise<SpawnedProxy> {
  const { spawn } = await import('node:child_process');
  const { existsSync, readFileSync } = await import('node:fs');
  const child = spawn(
    process.execPath,
    [`${repoRoot}bin/proxy.js`, ...args, '--admin-address-path', adminAddressPath],
    {
      stdio: ['ignore', 'ignore', 'pipe'],
    },
  );
  let err = '';
  child.stderr?.on('data', (d: Buffer) => {
    err += d.toString();
  });
  const exited = new Promise<number | string>((resolve) =>
    child.once('exit', (code, signal) => resolve(code ?? signal ?? -1)),
  );
  const deadline = Date.now() + 15_000;
  while (!existsSync(adminAddressPath) || readFileSync(adminAddressPath, 'utf8').trim() === '') {
    if (child.exitCode !== null || Date.now() > deadline) {
      child.kill('SIGKILL');
      throw new Error(`proxy did not start (exit ${child.exitCode}): ${err}`);
    }
    await new Promise((r) => setTimeout(r, 50));
  }
  return {
    child,
    admin: `http://${readFileSync(adminAddressPath, 'utf8').trim()}`,
    exited,
    stderr: () => err,
  };
}
