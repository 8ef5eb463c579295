/**
 * The RouteConfiguration's compile step. Its compiler, `compileRouteTable`, lives beside the
 * lookups that read its tables (src/dataplane/router/table.ts); this is the step route
 * discovery runs and the table HTTP connection managers route with, kept by the config's
 * identity, so a discovered table compiles once (its patterns included: RE2 never frees one).
 */
import type { JsonObject } from '../../events/index.js';
import { Report } from '../bootstrap/report.js';
import { compileRouteTable, type RouteTable } from '../dataplane/router/table.js';
import type { Compiled, CompileOptions } from './compiled.js';

const compiled = new WeakMap<JsonObject, RouteTable>();

/** Compiles one RouteConfiguration; `path` names it in findings (empty for a discovered one). */
export function compileRouteConfiguration(
  raw: JsonObject,
  path: string,
  options: Pick<CompileOptions, 'report'> = {},
): Compiled<RouteTable> {
  const report = options.report ?? new Report(path);
  const value = compileRouteTable(raw, path, report);
  compiled.set(raw, value);
  return { value, findings: report };
}

/**
 * The table of a route configuration that was accepted: the one its compile step made, or,
 * for a copy (a worker's snapshot, a replay), compiled once now. Its findings were reported
 * when it was accepted.
 */
export function compiledRouteConfiguration(raw: JsonObject): RouteTable {
  return (
    compiled.get(raw) ??
    compileRouteConfiguration(raw, '', { report: new Report(`RouteConfiguration '${String(raw.name)}'`) })
      .value
  );
}
