import { defineEvent } from './define.js';

/** An active health check changed a host's verdict (only transitions are events). */
export const activeHealthChanged = defineEvent('health/active-changed').withPayload<{
  cluster: string;
  address: string;
  healthy: boolean;
  /** Passing, but the host answered degraded (`x-proxy-degraded`); absent when not. */
  degraded?: boolean;
}>();

/** Outlier detection ejected a host, or brought it back. */
export const outlierChanged = defineEvent('health/outlier-changed').withPayload<{
  cluster: string;
  address: string;
  ejected: boolean;
  reason: string;
}>();
