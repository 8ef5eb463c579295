import type { State } from '../../../reducers/index.js';
import { entryOf } from '../../../reducers/names.js';
import { Report } from '../../bootstrap/report.js';
import { compiledRouteConfiguration } from '../../config/route-configuration.js';
import { compileRouteTable, type RouteTable } from './table.js';

/** What an HCM routes with before its discovered table arrives: nothing matches (404). */
const NONE: RouteTable = compileRouteTable({}, '', new Report('no route table'));

/** The discovered route table `name` of a snapshot, as route discovery compiled it. */
export function discoveredRoutes(state: State, name: string): RouteTable {
  const entry = entryOf(state.discovery.routes, name);
  return entry ? compiledRouteConfiguration(entry.config) : NONE;
}
