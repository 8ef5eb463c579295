/** The two outcomes a bootstrap may have (issue 10): refused naming fields, or served with every listener bound. */
import assert from 'node:assert/strict';
import type { Dump } from './bootstrap.js';
import { startProxyProcess } from './proxy-process.js';

/**
 * `<source>: <field path>: <message>`: the path names the field, e.g. `static_resources.clusters[0].type`
 * or, under a map, `typed_per_filter_config["envoy.filters.http.cors"].@type`; keys are as the
 * config wrote them, so lowerCamelCase too (`deferredStatOptions`), as protobuf's JSON reads them.
 */
const NAMES_A_FIELD =
  /: [a-z_][a-zA-Z0-9_]*(\[(\d+|"[^"]*")\])*(\.[a-z_@][a-zA-Z0-9_]*(\[(\d+|"[^"]*")\])*)*: /;

/** Fails unless there is at least one error and every one names the field it refuses. */
export function assertRefusedNamingFields(errors: string[], context: string): void {
  assert.ok(errors.length > 0, context);
  for (const e of errors) assert.match(e, NAMES_A_FIELD, e);
}

/** A copy of `bootstrap` with every static listener and the admin on a free port, the admin on loopback. */
export function onFreePorts(bootstrap: Dump): Dump {
  const b = structuredClone(bootstrap);
  b.admin = { ...(b.admin ?? {}), address: { socket_address: { address: '127.0.0.1', port_value: 0 } } };
  for (const l of b.static_resources?.listeners ?? []) l.address.socket_address.port_value = 0;
  return b;
}

/** Serves `bootstrap` (ports made free) in a real `proxy` process and checks every static listener is bound. */
export async function assertServesEveryListener(bootstrap: Dump): Promise<void> {
  const b = onFreePorts(bootstrap);
  const listeners: Dump[] = b.static_resources?.listeners ?? [];
  const proxy = await startProxyProcess(b, ['--concurrency', '1']);
  try {
    for (const l of listeners) assert.ok((await proxy.listenerPort(l.name)) > 0, `${l.name} unbound`);
  } finally {
    await proxy.stop();
  }
}
