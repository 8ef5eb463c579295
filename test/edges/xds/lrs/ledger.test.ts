/**
 * The load ledger: what each report says given counters that only grow. Whatever the
 * traffic between reports, the reports add up to the counters' growth since tracking began,
 * each one covers only its own period, and a sum over workers that dips for a report (a late
 * worker) is neither negative nor counted twice.
 */
import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import fc from 'fast-check';
import type { HostSpec } from '../../../../events/index.js';
import type { ClusterEntry } from '../../../../reducers/state.js';
import { type ClusterStats, type HostCountsOf, LoadLedger } from '../../../../src/edges/xds/lrs/ledger.js';
import { type HostCounters, zeroHostCounters } from '../../../../views/clusters/figures.js';
import { hostSpec } from '../../../helpers/upstream.js';

function entry(name: string, hosts: HostSpec[], config: Record<string, unknown> = {}): ClusterEntry {
  return {
    name,
    config: { name, ...config } as ClusterEntry['config'],
    addedViaApi: false,
    versionInfo: '',
    lastUpdated: 0,
    hosts: hosts.map((h) => ({ ...h, failedActiveHc: false, failedOutlierCheck: false })),
  };
}

/** Live counters by `cluster|address`, mutated by the tests as traffic would. */
function counters(): { of: HostCountsOf; at(cluster: string, address: string): HostCounters } {
  const all = new Map<string, HostCounters>();
  const at = (cluster: string, address: string) => {
    const key = `${cluster}|${address}`;
    let c = all.get(key);
    if (!c) {
      c = zeroHostCounters();
      all.set(key, c);
    }
    return c;
  };
  return { of: (cluster, address) => all.get(`${cluster}|${address}`), at };
}

function serve(c: HostCounters, ok: number, errors: number): void {
  c.rq_total += ok + errors;
  c.rq_success += ok;
  c.rq_error += errors;
}

const sum = (
  stats: ClusterStats[],
  key: 'total_successful_requests' | 'total_error_requests' | 'total_issued_requests',
) => stats.flatMap((s) => s.upstream_locality_stats).reduce((n, l) => n + l[key], 0);

const A = hostSpec('10.0.0.1:80', { locality: { region: 'eu', zone: 'a', sub_zone: '' } });
const B = hostSpec('10.0.0.2:80', { locality: { region: 'eu', zone: 'b', sub_zone: '' }, priority: 1 });
const C = hostSpec('10.0.0.3:80', { locality: { region: 'eu', zone: 'a', sub_zone: '' } });

describe('LoadLedger', () => {
  it('reports per locality and priority the requests of its period, endpoints when asked', () => {
    const clusters = { web: entry('web', [A, B, C], { eds_cluster_config: { service_name: 'svc' } }) };
    const live = counters();
    serve(live.at('web', A.address), 5, 5); // before tracking: never reported
    const ledger = new LoadLedger();
    ledger.track(['web'], clusters, live.of, 1000);
    serve(live.at('web', A.address), 2, 1);
    serve(live.at('web', C.address), 1, 0);
    serve(live.at('web', B.address), 0, 4);
    live.at('web', B.address).rq_active = 2;
    const [web] = ledger.report(clusters, live.of, 1250.5, true);
    assert.equal(web?.cluster_name, 'web');
    assert.equal(web?.cluster_service_name, 'svc');
    assert.deepEqual(web?.load_report_interval, { seconds: 0, nanos: 250_500_000 });
    assert.deepEqual(
      web?.upstream_locality_stats.map((l) => [
        l.locality.zone,
        l.priority,
        l.total_successful_requests,
        l.total_error_requests,
        l.total_issued_requests,
        l.total_requests_in_progress,
        l.upstream_endpoint_stats?.map((e) => e.address.socket_address.address),
      ]),
      [
        ['a', 0, 3, 1, 4, 0, ['10.0.0.1', '10.0.0.3']],
        ['b', 1, 0, 4, 4, 2, ['10.0.0.2']],
      ],
    );
    // Nothing since: only what is still in progress is told.
    const [again] = ledger.report(clusters, live.of, 1500, false);
    assert.deepEqual(
      again?.upstream_locality_stats.map((l) => [
        l.locality.zone,
        l.total_issued_requests,
        l.total_requests_in_progress,
      ]),
      [['b', 0, 2]],
    );
    assert.equal(again?.upstream_locality_stats[0]?.upstream_endpoint_stats, undefined);
    assert.deepEqual(again?.load_report_interval, { seconds: 0, nanos: 249_500_000 });
  });

  it('keeps the period of a cluster a new response keeps; starts a new one from now', () => {
    const clusters = { web: entry('web', [A]), api: entry('api', [B]) };
    const live = counters();
    const ledger = new LoadLedger();
    ledger.track(['web'], clusters, live.of, 0);
    serve(live.at('web', A.address), 1, 0);
    serve(live.at('api', B.address), 7, 0); // api is not tracked yet
    ledger.track(['web', 'api', 'later'], clusters, live.of, 100);
    serve(live.at('api', B.address), 1, 0);
    const stats = ledger.report(clusters, live.of, 300, false);
    assert.deepEqual(
      stats.map((s) => [s.cluster_name, sum([s], 'total_successful_requests'), s.load_report_interval.nanos]),
      [
        ['web', 1, 300_000_000],
        ['api', 1, 200_000_000],
      ],
      'a cluster the proxy lacks is left out; web kept its start',
    );
    assert.deepEqual(ledger.names, ['web', 'api', 'later']);
  });

  it('forgets a host that leaves: back with new counters, they count from zero', () => {
    const live = counters();
    const ledger = new LoadLedger();
    ledger.track(['web'], { web: entry('web', [A]) }, live.of, 0);
    serve(live.at('web', A.address), 3, 0);
    ledger.report({ web: entry('web', [A]) }, live.of, 1, false);
    ledger.report({ web: entry('web', []) }, live.of, 2, false);
    const fresh = counters(); // the host came back as a new object: zero counters
    serve(fresh.at('web', A.address), 2, 0);
    const stats = ledger.report({ web: entry('web', [A]) }, fresh.of, 3, false);
    assert.equal(sum(stats, 'total_successful_requests'), 2);
  });

  it('reports add up to the growth of the counters, whatever the traffic and late workers', () => {
    const step = fc.record({
      ok: fc.array(fc.nat(20), { minLength: 2, maxLength: 2 }),
      errors: fc.array(fc.nat(20), { minLength: 2, maxLength: 2 }),
      /** A worker's counts are missing from this report's sum. */
      late: fc.array(fc.boolean(), { minLength: 2, maxLength: 2 }),
    });
    fc.assert(
      fc.property(fc.array(step, { minLength: 1, maxLength: 12 }), (steps) => {
        const clusters = { web: entry('web', [A]) };
        const workers = [zeroHostCounters(), zeroHostCounters()];
        const ledger = new LoadLedger();
        const summed =
          (late: boolean[]): HostCountsOf =>
          () => {
            const out = zeroHostCounters();
            workers.forEach((w, i) => {
              if (late[i]) return;
              out.rq_total += w.rq_total;
              out.rq_success += w.rq_success;
              out.rq_error += w.rq_error;
            });
            return out;
          };
        ledger.track(['web'], clusters, summed([false, false]), 0);
        const reports: ClusterStats[] = [];
        steps.forEach((s, t) => {
          for (const [i, w] of workers.entries()) serve(w, s.ok[i]!, s.errors[i]!);
          reports.push(...ledger.report(clusters, summed(s.late), t + 1, false));
          for (const r of reports.at(-1)!.upstream_locality_stats) {
            assert.ok(r.total_successful_requests >= 0 && r.total_error_requests >= 0);
          }
        });
        // A last report with every worker answering catches up with everything.
        reports.push(...ledger.report(clusters, summed([false, false]), steps.length + 1, false));
        const ok = workers.reduce((n, w) => n + w.rq_success, 0);
        const errors = workers.reduce((n, w) => n + w.rq_error, 0);
        assert.equal(sum(reports, 'total_successful_requests'), ok);
        assert.equal(sum(reports, 'total_error_requests'), errors);
        assert.equal(sum(reports, 'total_issued_requests'), ok + errors);
      }),
      { seed: 20261125, numRuns: 200 },
    );
  });
});
