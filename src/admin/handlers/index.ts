import type { HandlerDescriptor } from '../registry.js';
import { serverHandlers } from './server.js';

/** Every admin endpoint, one family per file. */
export const handlers: HandlerDescriptor[] = [...serverHandlers];
