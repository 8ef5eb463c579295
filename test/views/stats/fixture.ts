import { StatsStore } from '../../../src/stats/store.js';

/** A store with known values: used and unused stats of every type. */
export function knownStore(): StatsStore {
  const store = new StatsStore();
  store.counter('cluster.foo.upstream_rq_200').add(3);
  store.counter('http.ingress_http.downstream_rq_2xx').add(2);
  store.counter('a.unused');
  store.gauge('cluster.foo.upstream_cx_active').set(1);
  store.gauge('server.live');
  store.textReadout('server.name').set('a<b');
  store.histogram('cluster.foo.upstream_rq_time');
  store.histogram('http.admin.downstream_rq_time').record(1);
  // two flushes: the sample is in the cumulative summary, the last interval is empty
  store.flush();
  store.flush();
  return store;
}
