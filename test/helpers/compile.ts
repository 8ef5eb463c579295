/** Compile steps run as the loader runs them (canonical form first), for tests of an HCM or a route table. */
import type { JsonObject } from '../../events/config.js';
import { canonicalMessage } from '../../src/bootstrap/canonical.js';
import { CONFIG_TYPE } from '../../src/bootstrap/extensions.js';
import { Report } from '../../src/bootstrap/report.js';
import { messageType } from '../../src/bootstrap/schema.js';
import { compileHcm, type HcmSpec } from '../../src/dataplane/http/hcm-config.js';
import { compileRouteTable, type RouteTable } from '../../src/dataplane/router/table.js';

const ROUTE_CONFIGURATION = 'envoy.api.v2.RouteConfiguration';

/** Runs a compile step the way the loader does, throwing the report's errors so tests fail loudly. */
export function compiled<T>(compile: (report: Report) => T): T {
  const report = new Report('test');
  const value = compile(report);
  if (report.failed) throw new Error(report.errors.join('\n'));
  return value;
}

/** The errors a compile step reports (empty when it compiled). */
export function findingsOf(compile: (report: Report) => unknown): string[] {
  const report = new Report('test');
  compile(report);
  return report.errors;
}

/** An HCM config as a user writes it (any filter spelling), canonicalised and compiled. */
export function compileTestHcm(raw: Record<string, unknown>): HcmSpec {
  return compiled((report) => {
    const ctx = { report, allowUnknown: false, disabled: new Set<string>() };
    const canonical = canonicalMessage(raw, messageType(CONFIG_TYPE.httpConnectionManager), '', ctx) ?? {};
    return compileHcm(canonical, '', report);
  });
}

/** A route table as a user writes it, canonicalised as the loader reads it (at `route_config`), then compiled. */
export function compileLoadedRoutes(raw: Record<string, unknown>, report: Report): RouteTable {
  const ctx = { report, allowUnknown: false, disabled: new Set<string>() };
  const canonical = canonicalMessage(raw, messageType(ROUTE_CONFIGURATION), 'route_config', ctx) ?? {};
  return compileRouteTable(canonical, 'route_config', report);
}

export function compileTestRoutes(raw: JsonObject): RouteTable {
  return compiled((report) => compileRouteTable(raw, 'route_config', report));
}
