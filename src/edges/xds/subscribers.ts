/**
 * What each watch is told, as a `Subscriber`: each update judged whole (a throw there is a bug
 * of ours, answered as a rejection, never a crash), each failed fetch and each bare attempt
 * counted in the scopes of the subscriptions it serves, and copies of a rejected update
 * (a management server re-sending it after each NACK) counted, not judged again, and
 * reported now and then as one event.
 */
import { rejectedAgain } from '../../../events/index.js';
import { unrefTimeout } from './grpc-stream.js';
import { type JudgeContext, judgeResponse } from './judge.js';
import { RejectedCopies } from './repeats.js';
import { RESOURCE_NAME, type ResourceKind, type Subscriber } from './types.js';
import type { Want } from './wants.js';

/** While a management server keeps re-sending a rejected update, how often the copies are reported. */
const REPEAT_REPORT_MS = 10_000;

export class Subscribers {
  /** Per watch (transport and type URL): copies of its last rejected update. */
  private readonly copies = new Map<string, { kind: ResourceKind; copies: RejectedCopies }>();
  private timer: NodeJS.Timeout | null = null;

  constructor(private readonly ctx: JudgeContext) {}

  /** The subscriber of a watch; `delta`: its updates are delta responses. */
  of(w: Want, delta: boolean): Subscriber {
    let entry = this.copies.get(w.key);
    if (!entry) {
      entry = { kind: w.kind, copies: new RejectedCopies() };
      this.copies.set(w.key, entry);
    }
    const seen = entry.copies;
    const { log, subscriptions } = this.ctx;
    return {
      onUpdate: (update) => {
        const again = seen.again(update);
        if (again !== null) {
          subscriptions.count(w.kind, w.names, 'update_rejected');
          this.reportSoon();
          return again;
        }
        this.report(w.kind, seen);
        let error: string | null;
        try {
          error = judgeResponse(this.ctx, w, delta, update);
        } catch (err) {
          log.error({ err, kind: w.kind }, `${w.kind.toUpperCase()} update failed`);
          subscriptions.count(w.kind, w.names, 'update_rejected');
          error = `update failed: ${(err as Error).message}`;
        }
        seen.judged(update, error);
        return error;
      },
      onFailure: () => {
        this.report(w.kind, seen);
        subscriptions.count(w.kind, w.names, 'update_failure');
      },
      onAttempt: () => subscriptions.count(w.kind, w.names, null),
    };
  }

  /** The copies of a rejected update counted since the last report: one event, one warning. */
  private report(kind: ResourceKind, seen: RejectedCopies): void {
    const report = seen.report();
    if (!report) return;
    const { version, error, count: n } = report;
    this.ctx.log.warn(
      { kind, version, count: n },
      `${kind.toUpperCase()} update rejected again ${n} time(s) (identical response): ${error}`,
    );
    this.ctx.store.dispatch(
      rejectedAgain({ kind, resource: RESOURCE_NAME[kind], versionInfo: version, count: n, error }),
      kind,
    );
  }

  /** While copies keep coming, their count is reported every `REPEAT_REPORT_MS`. */
  private reportSoon(): void {
    this.timer ??= unrefTimeout(REPEAT_REPORT_MS, () => {
      this.timer = null;
      for (const { kind, copies } of this.copies.values()) this.report(kind, copies);
    });
  }

  close(): void {
    if (this.timer) clearTimeout(this.timer);
  }
}
