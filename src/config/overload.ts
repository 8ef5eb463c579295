import type { JsonObject, OverloadActionKind } from '../../events/index.js';
import { listOf, objectOf } from '../../reducers/settings/values.js';
import { parseDuration } from '../bootstrap/duration.js';
import { acting, checkFields, type FieldTable } from '../bootstrap/honoured.js';
import { Report } from '../bootstrap/report.js';

/** A resource monitor: what it measures, under the name the config gives it (its stats use that name). */
export type MonitorSpec =
  | { name: string; kind: 'fixed_heap'; maxHeapBytes: number }
  | { name: string; kind: 'injected_resource'; filename: string }
  /**
   * The reference's proactive monitor of open downstream connections: no pressure is read, the
   * listeners refuse a connection over `maxConnections` (src/dataplane/listeners/limits.ts).
   */
  | { name: string; kind: 'global_downstream_max_connections'; maxConnections: number };

/** An action and the monitors' pressures that make it active (any one at or above its value). */
export interface ActionSpec {
  name: string;
  kind: OverloadActionKind;
  triggers: Array<{ monitor: string; threshold: number }>;
}

/** `overload_manager` compiled: read the monitors every `refreshMs`, set the actions from them. */
export interface OverloadSpec {
  refreshMs: number;
  monitors: MonitorSpec[];
  actions: ActionSpec[];
}

const OVERLOAD_FIELDS: FieldTable = acting('refresh_interval', 'resource_monitors', 'actions');
const MONITOR_FIELDS: FieldTable = acting('name', 'config', 'typed_config');
const ACTION_FIELDS: FieldTable = acting('name', 'triggers');
const TRIGGER_FIELDS: FieldTable = acting('name', 'threshold');
const THRESHOLD_FIELDS: FieldTable = acting('value');
const FIXED_HEAP_FIELDS: FieldTable = acting('max_heap_size_bytes');
const INJECTED_FIELDS: FieldTable = acting('filename');
const DOWNSTREAM_CONNECTIONS_FIELDS: FieldTable = acting('max_active_downstream_connections');

const ACTIONS: Record<string, OverloadActionKind> = {
  shrink_heap: 'shrink_heap',
  stop_accepting_requests: 'stop_accepting_requests',
  disable_http_keepalive: 'disable_http_keepalive',
  stop_accepting_connections: 'stop_accepting_connections',
};

/** `proxy.<family>.<name>` or the reference's `envoy.<family>.<name>`: the bare name, else null. */
function bareName(name: string, family: string): string | null {
  for (const prefix of [`proxy.${family}.`, `envoy.${family}.`])
    if (name.startsWith(prefix)) return name.slice(prefix.length);
  return null;
}

/** The field tables of this compile step, by the message name its findings use (docs/bootstrap.md lists them). */
export const FIELD_TABLES = {
  OverloadManager: OVERLOAD_FIELDS,
  ResourceMonitor: MONITOR_FIELDS,
  OverloadAction: ACTION_FIELDS,
  Trigger: TRIGGER_FIELDS,
  ThresholdTrigger: THRESHOLD_FIELDS,
  FixedHeapConfig: FIXED_HEAP_FIELDS,
  InjectedResourceConfig: INJECTED_FIELDS,
  DownstreamConnectionsConfig: DOWNSTREAM_CONNECTIONS_FIELDS,
};

/** A monitor's own config: the deprecated `config` Struct or `typed_config` without its `@type`. */
function monitorConfig(raw: JsonObject): JsonObject {
  return objectOf(raw.typed_config ?? raw.config);
}

function compileMonitor(raw: JsonObject, path: string, report: Report): MonitorSpec | null {
  checkFields(raw, path, report, MONITOR_FIELDS, 'ResourceMonitor');
  const name = typeof raw.name === 'string' ? raw.name : '';
  if (!name) {
    report.error(`${path}.name`, 'required field missing', 'missing');
    return null;
  }
  const config = monitorConfig(raw);
  const configPath = `${path}.${raw.typed_config !== undefined ? 'typed_config' : 'config'}`;
  const kind = bareName(name, 'resource_monitors');
  if (kind === 'fixed_heap') {
    checkFields(config, configPath, report, FIXED_HEAP_FIELDS, 'FixedHeapConfig');
    const max = Number(config.max_heap_size_bytes ?? 0);
    if (!Number.isSafeInteger(max) || max <= 0) {
      report.error(`${configPath}.max_heap_size_bytes`, 'must be a positive number of bytes');
      return null;
    }
    return { name, kind, maxHeapBytes: max };
  }
  if (kind === 'injected_resource') {
    checkFields(config, configPath, report, INJECTED_FIELDS, 'InjectedResourceConfig');
    const filename = typeof config.filename === 'string' ? config.filename : '';
    if (!filename) {
      report.error(`${configPath}.filename`, 'required field missing', 'missing');
      return null;
    }
    return { name, kind, filename };
  }
  if (kind === 'global_downstream_max_connections') {
    checkFields(config, configPath, report, DOWNSTREAM_CONNECTIONS_FIELDS, 'DownstreamConnectionsConfig');
    const max = Number(config.max_active_downstream_connections ?? 0);
    if (!Number.isSafeInteger(max) || max <= 0) {
      report.error(
        `${configPath}.max_active_downstream_connections`,
        'must be a positive number of connections',
      );
      return null;
    }
    return { name, kind, maxConnections: max };
  }
  report.unsupported(
    `${path}.name`,
    `resource monitor '${name}' is not implemented (fixed_heap, injected_resource and global_downstream_max_connections are)`,
  );
  return null;
}

function compileAction(
  raw: JsonObject,
  path: string,
  monitors: ReadonlySet<string>,
  report: Report,
  proactive: ReadonlySet<string> = new Set(),
): ActionSpec | null {
  checkFields(raw, path, report, ACTION_FIELDS, 'OverloadAction');
  const name = typeof raw.name === 'string' ? raw.name : '';
  const bare = bareName(name, 'overload_actions') ?? '';
  const kind = Object.hasOwn(ACTIONS, bare) ? ACTIONS[bare] : undefined;
  if (!name) report.error(`${path}.name`, 'required field missing', 'missing');
  else if (kind === undefined)
    report.unsupported(`${path}.name`, `overload action '${name}' is not implemented`);
  const triggers: ActionSpec['triggers'] = [];
  const rawTriggers = listOf(raw.triggers);
  if (rawTriggers.length === 0) report.error(`${path}.triggers`, 'needs at least one trigger', 'missing');
  rawTriggers.forEach((t, i) => {
    const at = `${path}.triggers[${i}]`;
    checkFields(t, at, report, TRIGGER_FIELDS, 'Trigger');
    const monitor = typeof t.name === 'string' ? t.name : '';
    if (!monitors.has(monitor))
      report.error(`${at}.name`, `unknown trigger resource '${monitor}': name one of resource_monitors`);
    else if (proactive.has(monitor))
      report.unsupported(
        `${at}.name`,
        `a trigger on '${monitor}' (it limits connections itself; it has no pressure here) is not implemented`,
      );
    else if (triggers.some((x) => x.monitor === monitor))
      report.error(`${at}.name`, `duplicate trigger resource '${monitor}' for overload action '${name}'`);
    if (t.threshold === undefined) {
      report.error(`${at}.threshold`, 'required field missing', 'missing');
      return;
    }
    const threshold = objectOf(t.threshold);
    checkFields(threshold, `${at}.threshold`, report, THRESHOLD_FIELDS, 'ThresholdTrigger');
    const value = Number(threshold.value ?? 0);
    if (!(value >= 0 && value <= 1)) report.error(`${at}.threshold.value`, 'must be from 0 to 1');
    else triggers.push({ monitor, threshold: value });
  });
  return kind === undefined ? null : { name, kind, triggers };
}

/** Compiles the bootstrap's `overload_manager`; findings under `path`. */
export function compileOverloadManager(raw: JsonObject, path: string, report: Report): OverloadSpec {
  checkFields(raw, path, report, OVERLOAD_FIELDS, 'OverloadManager');
  let refreshMs = 1000;
  if (raw.refresh_interval !== undefined) {
    const d = typeof raw.refresh_interval === 'string' ? parseDuration(raw.refresh_interval) : undefined;
    const ms = d ? Number(d.seconds) * 1000 + Math.ceil(d.nanos / 1e6) : Number.NaN;
    if (!d || d.negative || !(ms > 0) || ms > 2 ** 31 - 1)
      report.error(`${path}.refresh_interval`, 'must be a positive duration like "0.25s"');
    else refreshMs = ms;
  }
  const monitors: MonitorSpec[] = [];
  const rawMonitors = listOf(raw.resource_monitors);
  if (rawMonitors.length === 0)
    report.error(`${path}.resource_monitors`, 'needs at least one resource monitor', 'missing');
  rawMonitors.forEach((m, i) => {
    const at = `${path}.resource_monitors[${i}]`;
    const monitor = compileMonitor(m, at, report);
    if (!monitor) return;
    if (monitors.some((x) => x.name === monitor.name))
      report.error(`${at}.name`, `duplicate resource monitor '${monitor.name}'`);
    else monitors.push(monitor);
  });
  const names = new Set(monitors.map((m) => m.name));
  const proactive = new Set(
    monitors.filter((m) => m.kind === 'global_downstream_max_connections').map((m) => m.name),
  );
  const actions: ActionSpec[] = [];
  listOf(raw.actions).forEach((a, i) => {
    const at = `${path}.actions[${i}]`;
    const action = compileAction(a, at, names, report, proactive);
    if (!action) return;
    if (actions.some((x) => x.kind === action.kind))
      report.error(`${at}.name`, `duplicate overload action '${action.name}'`);
    else actions.push(action);
  });
  return { refreshMs, monitors, actions };
}

const compiled = new WeakMap<JsonObject, OverloadSpec | null>();

/**
 * The bootstrap's `overload_manager` as the edges run it (null: none), compiled once per
 * bootstrap: the monitor and each thread's heap shrinker read the same value. Its findings
 * were given when the bootstrap was validated.
 */
export function compiledOverloadManager(bootstrap: JsonObject | undefined): OverloadSpec | null {
  if (!bootstrap) return null;
  const hit = compiled.get(bootstrap);
  if (hit !== undefined) return hit;
  const raw = bootstrap.overload_manager;
  const spec =
    raw === undefined
      ? null
      : compileOverloadManager(objectOf(raw), 'overload_manager', new Report('overload'));
  compiled.set(bootstrap, spec);
  return spec;
}

/**
 * The connections the `global_downstream_max_connections` monitor allows open at once, or
 * null without one: it takes the place of the runtime key `overload.global_downstream_max_connections`.
 */
export function globalConnectionLimit(bootstrap: JsonObject | undefined): number | null {
  const monitor = compiledOverloadManager(bootstrap)?.monitors.find(
    (m) => m.kind === 'global_downstream_max_connections',
  );
  return monitor?.kind === 'global_downstream_max_connections' ? monitor.maxConnections : null;
}
