import type { Report } from '../bootstrap/report.js';
import type { Secrets } from './secrets.js';

/** What one compile step returns: its value (best effort when it failed) and what it found. */
export interface Compiled<T> {
  value: T;
  /** The report the findings went to (the caller's, or a fresh one labelled with the path). */
  findings: Report;
}

/** What a compile step may be given besides the resource. */
export interface CompileOptions {
  /** The static secrets a TLS context may name. */
  secrets?: Secrets;
  /** Where findings go: a whole bootstrap shares one, so advisory warnings are given once. */
  report?: Report;
}
