import type { Json, JsonObject } from '../../events/index.js';
import { CONFIG_TYPE } from './extensions.js';
import type { Report } from './report.js';
import { TYPE_URL_PREFIX } from './schema.js';
import { validateCluster } from './validate-cluster.js';

function obj(value: Json | undefined): JsonObject {
  return value !== null && typeof value === 'object' && !Array.isArray(value) ? value : {};
}

function list(value: Json | undefined): Json[] {
  return Array.isArray(value) ? value : [];
}

/**
 * Names unnamed static listeners `listener_<index>` (index in `static_resources.listeners`),
 * skipping names already taken. The reference allocates a UUID instead; an index keeps
 * replays and config dumps deterministic.
 */
export function nameListeners(bootstrap: JsonObject): void {
  const listeners = list(obj(bootstrap.static_resources).listeners);
  const taken = new Set(listeners.map((l) => obj(l).name).filter((n) => typeof n === 'string'));
  listeners.forEach((l, i) => {
    const listener = obj(l);
    if (listener.name) return;
    let name = `listener_${i}`;
    for (let n = 1; taken.has(name); n++) name = `listener_${i}_${n}`;
    taken.add(name);
    listener.name = name;
  });
}

function checkUnique(items: Json[], what: string, p: string, report: Report): void {
  const seen = new Map<string, number>();
  items.forEach((item, i) => {
    const name = obj(item).name;
    if (typeof name !== 'string' || name === '') return;
    const first = seen.get(name);
    if (first === undefined) seen.set(name, i);
    else
      report.error(`${p}[${i}].name`, `duplicate ${what} name '${name}' (first defined at ${p}[${first}])`);
  });
}

/** Rules across the whole (merged) bootstrap: cluster rules, listener rules, unique names. */
export function validateBootstrap(bootstrap: JsonObject, report: Report): void {
  const resources = obj(bootstrap.static_resources);
  const clusters = list(resources.clusters);
  for (const [i, c] of clusters.entries()) validateCluster(obj(c), `static_resources.clusters[${i}]`, report);
  checkUnique(clusters, 'cluster', 'static_resources.clusters', report);
  const listeners = list(resources.listeners);
  for (const [i, l] of listeners.entries())
    validateListener(obj(l), `static_resources.listeners[${i}]`, report);
  checkUnique(listeners, 'listener', 'static_resources.listeners', report);
}

function validateListener(listener: JsonObject, p: string, report: Report): void {
  const socket = obj(obj(listener.address).socket_address);
  if (listener.address === undefined) report.error(`${p}.address`, 'required field missing');
  else if (obj(listener.address).socket_address !== undefined && !socket.address) {
    report.error(`${p}.address.socket_address.address`, 'required field missing');
  }
  if (Number(socket.port_value ?? 0) > 65535) {
    report.error(`${p}.address.socket_address.port_value`, `${socket.port_value} is not a port (0..65535)`);
  }
  const chains = list(listener.filter_chains);
  if (chains.length === 0 && listener.api_listener === undefined) {
    report.error(`${p}.filter_chains`, 'a listener needs at least one filter chain');
  }
  chains.forEach((chain, c) => {
    list(obj(chain).filters).forEach((f, i) => {
      const typed = obj(obj(f).typed_config);
      const fp = `${p}.filter_chains[${c}].filters[${i}].typed_config`;
      if (typed['@type'] === TYPE_URL_PREFIX + CONFIG_TYPE.httpConnectionManager) checkHcm(typed, fp, report);
      if (typed['@type'] === TYPE_URL_PREFIX + CONFIG_TYPE.tcpProxy) checkTcpProxy(typed, fp, report);
    });
  });
}

function checkHcm(hcm: JsonObject, p: string, report: Report): void {
  if (!hcm.stat_prefix) report.error(`${p}.stat_prefix`, 'required field missing');
  if (hcm.rds === undefined && hcm.route_config === undefined && hcm.scoped_routes === undefined) {
    report.error(p, 'needs routes: set route_config (inline) or rds');
  }
}

function checkTcpProxy(tcp: JsonObject, p: string, report: Report): void {
  if (!tcp.stat_prefix) report.error(`${p}.stat_prefix`, 'required field missing');
  if (tcp.cluster === undefined && tcp.weighted_clusters === undefined) {
    report.error(p, 'needs an upstream: set cluster or weighted_clusters');
  }
}
