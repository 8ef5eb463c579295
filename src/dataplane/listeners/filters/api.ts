import type { JsonObject } from '../../../../events/config.js';
import type { ExtensionIdentity } from '../../../bootstrap/extensions.js';
import type { FieldTable } from '../../../bootstrap/honoured.js';
import type { Report } from '../../../bootstrap/report.js';

/**
 * What the listener filters of a listener ask of it. The listener itself does their work
 * (src/dataplane/listeners/listener.ts): it peeks at the ClientHello and restores the original
 * destination before it picks a chain, so a filter's instance is the part of the listener it
 * switches on.
 */
export interface ListenerFilterSlots {
  /** The TLS inspector: every connection is peeked (without it, only where a chain matches on TLS facts). */
  tlsInspector: boolean;
  /** The HTTP inspector: a plain-text connection's first line offers its HTTP version to `application_protocols`. */
  httpInspector: boolean;
  /** The original destination filter: each connection's local address becomes where its client dialled. */
  originalDst: boolean;
  /** The listener-relative path of the first filter that needs the native socket helper ('' for none). */
  originalDstAt: string;
}

/**
 * One listener filter extension: its identity, its one compile step (`--mode validate` and
 * serving) and what it switches on in the listener. See docs/data-plane.md, "Network and
 * listener filters".
 */
export interface ListenerFilterFactory<C = unknown> extends ExtensionIdentity {
  /** The field tables `compile` checks against, by message name (docs/bootstrap.md). */
  fieldTables: Record<string, FieldTable>;
  compile(config: JsonObject, path: string, report: Report): C;
  /** Switches on the listener's part for this filter; `at` is the filter's listener-relative path. */
  install(config: C, listener: ListenerFilterSlots, at: string): void;
}
