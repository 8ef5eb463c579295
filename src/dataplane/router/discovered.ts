import type { State } from '../../../reducers/index.js';
import { entryOf } from '../../../reducers/names.js';
import { Report } from '../../bootstrap/report.js';
import { compileRouteTable, type RouteTable } from './table.js';

/** What an HCM routes with before its discovered table arrives: nothing matches (404). */
const NONE: RouteTable = compileRouteTable({}, '', new Report('no route table'));

/** Compiled once per table config (snapshot configs are frozen and shared between snapshots). */
const compiled = new WeakMap<object, RouteTable>();

/** The discovered route table `name` of a snapshot, compiled (it compiled cleanly when accepted). */
export function discoveredRoutes(state: State, name: string): RouteTable {
  const entry = entryOf(state.discovery.routes, name);
  if (!entry) return NONE;
  let table = compiled.get(entry.config);
  if (!table) {
    table = compileRouteTable(entry.config, '', new Report(`RouteConfiguration '${name}'`));
    compiled.set(entry.config, table);
  }
  return table;
}
