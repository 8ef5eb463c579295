import type { JsonObject } from '../../../events/config.js';
import type { HttpRequest } from '../codec/request.js';

/** A tap condition over one request: its headers, and its response's once it has one. */
export type TapMatch = (req: HttpRequest, response: HttpRequest) => boolean;

/** What `POST /tap` attaches to a config id: which requests to record, how much of the bodies, and where. */
export interface TapSession {
  match: TapMatch;
  maxRxBytes: number;
  maxTxBytes: number;
  bodyAsString: boolean;
  /** Receives each matched request's trace (a `TraceWrapper` as JSON). */
  emit(trace: JsonObject): void;
}

/**
 * The tap filters configured in this process and the sessions attached to them, by config
 * id. A request reads `sessions` once; with no session attached it records nothing.
 */
export class TapRegistry {
  /** How many connection managers carry a tap filter with each config id. */
  private readonly filters = new Map<string, number>();
  readonly sessions = new Map<string, TapSession>();

  hasFilter(configId: string): boolean {
    return (this.filters.get(configId) ?? 0) > 0;
  }

  addFilter(configId: string): void {
    this.filters.set(configId, (this.filters.get(configId) ?? 0) + 1);
  }

  removeFilter(configId: string): void {
    const n = (this.filters.get(configId) ?? 0) - 1;
    if (n > 0) this.filters.set(configId, n);
    else this.filters.delete(configId);
  }
}
