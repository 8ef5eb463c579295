import type { HostState } from '../state.js';

/** How a balancer treats a host: excluded from traffic, used second, or first. */
export type HostHealth = 'healthy' | 'degraded' | 'unhealthy';

/** Discovery statuses the reference maps to `/failed_eds_health`. */
function edsFailed(host: HostState): boolean {
  return host.edsHealth === 'UNHEALTHY' || host.edsHealth === 'DRAINING' || host.edsHealth === 'TIMEOUT';
}

/**
 * A host is unhealthy when an active check, outlier detection or discovery says so;
 * degraded when discovery says DEGRADED or an active check passes degraded; healthy otherwise
 * (a host nobody checks is healthy).
 */
export function hostHealth(host: HostState): HostHealth {
  if (host.failedActiveHc || host.failedOutlierCheck || edsFailed(host)) return 'unhealthy';
  return host.edsHealth === 'DEGRADED' || host.degradedActiveHc ? 'degraded' : 'healthy';
}

/**
 * The `health_flags` text of `/clusters`: `healthy`, or the failing flags concatenated in
 * the reference's order (`/failed_active_hc`, `/failed_outlier_check`, `/failed_eds_health`,
 * `/degraded_active_hc`, `/degraded_eds_health`, `/pending_dynamic_removal`, `/pending_active_hc`).
 */
export function healthFlags(host: HostState): string {
  let flags = '';
  if (host.failedActiveHc) flags += '/failed_active_hc';
  if (host.failedOutlierCheck) flags += '/failed_outlier_check';
  if (edsFailed(host)) flags += '/failed_eds_health';
  if (host.degradedActiveHc) flags += '/degraded_active_hc';
  if (host.edsHealth === 'DEGRADED') flags += '/degraded_eds_health';
  if (host.pendingDynamicRemoval) flags += '/pending_dynamic_removal';
  if (host.pendingActiveHc) flags += '/pending_active_hc';
  return flags || 'healthy';
}
