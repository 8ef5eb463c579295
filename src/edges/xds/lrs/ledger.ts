/**
 * What a load report says: per tracked cluster, the requests of each locality (and, when
 * asked, each endpoint) since the cluster's last report. The data plane's per-host counters
 * only ever grow, so the ledger keeps, per host, the counts already reported and reports the
 * difference, where the reference latches (reads and zeroes) its counters.
 */
import type { Locality } from '../../../../events/config.js';
import { entryOf } from '../../../../reducers/names.js';
import type { ClusterEntry } from '../../../../reducers/state.js';
import type { HostCounters } from '../../../../views/clusters/figures.js';

/** A host's live counters by cluster and address (`ip:port`), as `/clusters` reads them. */
export type HostCountsOf = (cluster: string, address: string) => HostCounters | undefined;

interface RequestCounts {
  total_successful_requests: number;
  total_requests_in_progress: number;
  total_error_requests: number;
  total_issued_requests: number;
}

export interface EndpointStats extends RequestCounts {
  address: { socket_address: { address: string; port_value: number } };
}

export interface LocalityStats extends RequestCounts {
  locality: Locality;
  priority: number;
  upstream_endpoint_stats?: EndpointStats[];
}

/** `envoy.api.v2.endpoint.ClusterStats` as the encoder takes it. */
export interface ClusterStats {
  cluster_name: string;
  cluster_service_name?: string;
  upstream_locality_stats: LocalityStats[];
  total_dropped_requests: number;
  load_report_interval: { seconds: number; nanos: number };
}

/** The counts of a host already reported: successes, errors and requests issued. */
interface Reported {
  success: number;
  error: number;
  issued: number;
}

interface Tracked {
  /** When the cluster's current report period started (ms, monotonic). */
  since: number;
  reported: Map<string, Reported>;
}

type Clusters = Readonly<Record<string, ClusterEntry>>;

function reportedNow(
  entry: ClusterEntry | undefined,
  name: string,
  counts: HostCountsOf,
): Map<string, Reported> {
  const out = new Map<string, Reported>();
  for (const host of entry?.hosts ?? []) {
    const c = counts(name, host.address);
    if (c) out.set(host.address, { success: c.rq_success, error: c.rq_error, issued: c.rq_total });
  }
  return out;
}

/** A duration in ms as `google.protobuf.Duration`. */
function duration(ms: number): { seconds: number; nanos: number } {
  const seconds = Math.floor(ms / 1000);
  return { seconds, nanos: Math.round((ms - seconds * 1000) * 1e6) };
}

export class LoadLedger {
  private tracked = new Map<string, Tracked>();

  /**
   * The clusters reported from now on. One already tracked keeps its period and counts, so
   * nothing between two reports is lost or told twice; a new one starts now, from the counts
   * its hosts have (what came before is not reported), as the reference does.
   */
  track(names: Iterable<string>, clusters: Clusters, counts: HostCountsOf, now: number): void {
    const next = new Map<string, Tracked>();
    for (const name of names) {
      const kept = this.tracked.get(name);
      next.set(name, kept ?? { since: now, reported: reportedNow(entryOf(clusters, name), name, counts) });
    }
    this.tracked = next;
  }

  /** The names tracked, in the order the last response gave them. */
  get names(): string[] {
    return [...this.tracked.keys()];
  }

  /**
   * The report of every tracked cluster the snapshot has (one it does not have yet is left
   * out, its period running on), and the start of each one's next period.
   */
  report(clusters: Clusters, counts: HostCountsOf, now: number, endpoints: boolean): ClusterStats[] {
    const out: ClusterStats[] = [];
    for (const [name, tracked] of this.tracked) {
      const entry = entryOf(clusters, name);
      if (!entry) continue;
      out.push(this.clusterStats(name, entry, tracked, counts, now, endpoints));
      tracked.since = now;
    }
    return out;
  }

  private clusterStats(
    name: string,
    entry: ClusterEntry,
    tracked: Tracked,
    counts: HostCountsOf,
    now: number,
    endpoints: boolean,
  ): ClusterStats {
    const localities = new Map<string, LocalityStats>();
    const present = new Set<string>();
    for (const host of entry.hosts) {
      present.add(host.address);
      const c = counts(name, host.address);
      const before = tracked.reported.get(host.address) ?? { success: 0, error: 0, issued: 0 };
      const success = c?.rq_success ?? 0;
      const error = c?.rq_error ?? 0;
      const issued = c?.rq_total ?? 0;
      // A sum over workers can dip when one answers late; the next report catches up.
      tracked.reported.set(host.address, {
        success: Math.max(before.success, success),
        error: Math.max(before.error, error),
        issued: Math.max(before.issued, issued),
      });
      const own: RequestCounts = {
        total_successful_requests: Math.max(0, success - before.success),
        total_requests_in_progress: c?.rq_active ?? 0,
        total_error_requests: Math.max(0, error - before.error),
        total_issued_requests: Math.max(0, issued - before.issued),
      };
      if (own.total_successful_requests + own.total_error_requests + own.total_requests_in_progress === 0)
        continue;
      const { region, zone, sub_zone } = host.locality;
      const key = JSON.stringify([host.priority, region, zone, sub_zone]);
      let locality = localities.get(key);
      if (!locality) {
        locality = {
          locality: { region, zone, sub_zone },
          priority: host.priority,
          total_successful_requests: 0,
          total_requests_in_progress: 0,
          total_error_requests: 0,
          total_issued_requests: 0,
          ...(endpoints ? { upstream_endpoint_stats: [] } : {}),
        };
        localities.set(key, locality);
      }
      locality.total_successful_requests += own.total_successful_requests;
      locality.total_requests_in_progress += own.total_requests_in_progress;
      locality.total_error_requests += own.total_error_requests;
      locality.total_issued_requests += own.total_issued_requests;
      locality.upstream_endpoint_stats?.push({
        address: { socket_address: { address: host.ip, port_value: host.port } },
        ...own,
      });
    }
    // A host that left is forgotten: if it comes back, its counters start again from zero.
    for (const address of tracked.reported.keys())
      if (!present.has(address)) tracked.reported.delete(address);
    const serviceName = (entry.config.eds_cluster_config as { service_name?: string } | undefined)
      ?.service_name;
    return {
      cluster_name: name,
      ...(serviceName ? { cluster_service_name: serviceName } : {}),
      upstream_locality_stats: [...localities.values()],
      // The reference drops requests in maintenance mode and by drop_overloads: this build has neither.
      total_dropped_requests: 0,
      load_report_interval: duration(now - tracked.since),
    };
  }
}
