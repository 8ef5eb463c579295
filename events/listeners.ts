import { defineEvent } from './define.js';

/** A listener's socket is bound; `port` is the real one when the config said 0. */
export const listenerBound = defineEvent('listener/bound').withPayload<{
  name: string;
  address: string;
  port: number;
}>();

export const listenerBindFailed = defineEvent('listener/bind-failed').withPayload<{
  name: string;
  error: string;
}>();

/** `POST /drain_listeners`. */
export const drainStarted = defineEvent('listener/drain-started').withPayload<{
  inboundOnly: boolean;
  graceful: boolean;
  strategy: 'gradual' | 'immediate';
  drainTimeMs: number;
}>();

/** The listeners named have stopped accepting. */
export const listenersStopped = defineEvent('listener/stopped').withPayload<{ names: string[] }>();
