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
import { type Judged, RESOURCE_NAME, type ResourceKind, type Subscriber, type Update } from './types.js';
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
    const judge = (update: Update): Judged => {
      const again = seen.again(update);
      if (again !== null) {
        subscriptions.count(w.kind, w.names, 'update_rejected');
        this.reportSoon();
        return again;
      }
      this.report(w.kind, seen);
      const failed = (err: unknown) => {
        log.error({ err, kind: w.kind }, `${w.kind.toUpperCase()} update failed`);
        subscriptions.count(w.kind, w.names, 'update_rejected');
        return `update failed: ${(err as Error).message}`;
      };
      const judged = (error: string | null) => {
        seen.judged(update, error);
        return error;
      };
      try {
        const verdict = judgeResponse(this.ctx, w, delta, update);
        return verdict instanceof Promise ? verdict.catch(failed).then(judged) : judged(verdict);
      } catch (err) {
        return judged(failed(err));
      }
    };
    // While a judgement waits (a listener response for its binds), the next update waits its turn.
    let waiting: Promise<unknown> | null = null;
    return {
      onUpdate: (update) => {
        const verdict = waiting ? waiting.then(() => judge(update)) : judge(update);
        if (verdict instanceof Promise) {
          const turn = verdict.finally(() => {
            if (waiting === turn) waiting = null;
          });
          waiting = turn;
        }
        return verdict;
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
