import type { HandlerDescriptor } from '../registry.js';
import { bundleHandler } from './bundle.js';
import { certsHandlers } from './certs.js';
import { clustersHandlers } from './clusters.js';
import { configDumpHandlers } from './config-dump.js';
import { countersHandlers } from './counters.js';
import { eventsHandlers } from './events.js';
import { helpHandlers } from './help.js';
import { listenersHandlers } from './listeners.js';
import { loggingHandlers } from './logging.js';
import { profilingHandlers } from './profiling.js';
import { runtimeHandlers } from './runtime.js';
import { serverHandlers } from './server.js';
import { statsHandlers } from './stats.js';
import { tapHandlers } from './tap.js';

/** Every admin endpoint, one family per file. */
export const handlers: HandlerDescriptor[] = [
  ...serverHandlers,
  ...eventsHandlers,
  ...helpHandlers,
  ...certsHandlers,
  ...clustersHandlers,
  ...configDumpHandlers,
  ...countersHandlers,
  ...listenersHandlers,
  ...loggingHandlers,
  ...profilingHandlers,
  ...runtimeHandlers,
  ...statsHandlers,
  ...tapHandlers,
  bundleHandler,
];
