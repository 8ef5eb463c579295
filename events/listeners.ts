import { defineEvent } from './define.js';

/** A listener's socket is bound; `port` is the real one when the config said 0. */
export const listenerBound = defineEvent<'listener/bound', { name: string; address: string; port: number }>(
  'listener/bound',
);

export const listenerBindFailed = defineEvent<'listener/bind-failed', { name: string; error: string }>(
  'listener/bind-failed',
);

/** `POST /drain_listeners`. */
export const drainStarted = defineEvent<
  'listener/drain-started',
  {
    inboundOnly: boolean;
    graceful: boolean;
    strategy: 'gradual' | 'immediate';
    drainTimeMs: number;
  }
>('listener/drain-started');

/** The listeners named have stopped accepting. */
export const listenersStopped = defineEvent<'listener/stopped', { names: string[] }>('listener/stopped');
