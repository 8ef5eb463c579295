/**
 * Every data-plane thread binds and stops each listener itself, so one listener's bind or stop
 * has as many outcomes as there are threads; they are folded into one event each once every
 * live thread has answered. A bind is `listener/bound` when all bound, else the first
 * `listener/bind-failed`; until then the listener stays pending, so listener discovery's
 * judgement (src/edges/xds/judge.ts) sees a listener bound everywhere or failed, never one
 * that only some threads serve. A stop is `listener/stopped` once every live thread stopped.
 */
import type { ProxyEvent } from '../../../events/index.js';
import type { State } from '../../../reducers/index.js';

type BindEvent = Extract<ProxyEvent, { type: 'listener/bound' | 'listener/bind-failed' }>;
type StopEvent = Extract<ProxyEvent, { type: 'listener/stopped' }>;

interface BindFold {
  /** The threads that answered. */
  by: Set<number>;
  /** The first failure, else the first success. */
  outcome: BindEvent;
  /** The port the first thread that bound it got (0: none yet). */
  port: number;
}

export class ListenerReports {
  private readonly binds = new Map<string, BindFold>();
  /** Per listener: the threads that reported it stopped. */
  private readonly stoppedBy = new Map<string, Set<number>>();

  /**
   * `live` names the threads whose answer counts now (a worker that ended owes none);
   * `dispatch` takes each folded event.
   */
  constructor(
    private readonly state: () => State,
    private readonly live: () => number[],
    private readonly dispatch: (event: ProxyEvent, source: string) => void,
  ) {}

  /** Thread `thread`'s outcome of binding `event.name`; one for a listener not pending is late, and dropped. */
  bind(event: BindEvent, thread: number): void {
    if (this.state().listeners[event.name]?.state !== 'pending') return;
    const port = event.type === 'listener/bound' ? event.port : 0;
    const fold = this.binds.get(event.name);
    if (!fold) this.binds.set(event.name, { by: new Set([thread]), outcome: event, port });
    else {
      fold.by.add(thread);
      fold.port ||= port;
      if (fold.outcome.type === 'listener/bound' && event.type === 'listener/bind-failed')
        fold.outcome = event;
    }
    this.settle();
  }

  /** The port a thread bound the pending listener `name` at, for the others to bind (0: none has). */
  boundPort(name: string): number {
    return this.binds.get(name)?.port ?? 0;
  }

  /** Dispatches each bind every live thread has answered; called too when a thread ends. */
  settle(): void {
    const live = this.live();
    for (const [name, fold] of this.binds) {
      if (this.state().listeners[name]?.state !== 'pending') this.binds.delete(name);
      else if (live.every((id) => fold.by.has(id))) {
        this.binds.delete(name);
        this.dispatch(fold.outcome, 'listener');
      }
    }
  }

  /** Thread `thread` stopped the listeners named: those every live thread has stopped are. */
  stopped(event: StopEvent, thread: number, source: string): void {
    const live = this.live();
    const done: string[] = [];
    for (const name of event.names) {
      const by = this.stoppedBy.get(name) ?? new Set<number>();
      by.add(thread);
      this.stoppedBy.set(name, by);
      if (live.every((id) => by.has(id)) && this.state().listeners[name]?.state !== 'stopped')
        done.push(name);
    }
    if (done.length > 0) this.dispatch({ ...event, names: done }, source);
  }
}
