/**
 * One line a person reads for each event, and what the event is about (for filters by
 * cluster, listener or host). One entry per event type, keyed like the reducer table: an
 * event type with a creator in `events/` and no entry here does not compile.
 */
import type { Envelope, EventType, HostSpec, ProxyEvent } from '../../events/index.js';
import type { EventsByType } from '../../reducers/table.js';

/** What an event says, and the clusters, listeners and hosts (`ip:port`) it names. */
export interface EventSummary {
  text: string;
  clusters: string[];
  listeners: string[];
  hosts: string[];
}

type Summarizers = { [T in EventType]: (event: EventsByType<ProxyEvent>[T]) => EventSummary };

function about(
  text: string,
  subjects: { clusters?: string[]; listeners?: string[]; hosts?: string[] } = {},
): EventSummary {
  return {
    text,
    clusters: subjects.clusters ?? [],
    listeners: subjects.listeners ?? [],
    hosts: subjects.hosts ?? [],
  };
}

/** `a, b, c and 4 more`: a long list shortened to its first items. */
function some(items: readonly string[], shown = 3): string {
  if (items.length === 0) return 'none';
  const head = items.slice(0, shown).join(', ');
  return items.length > shown ? `${head} and ${items.length - shown} more` : head;
}

/** `1 host`, `2 hosts`. */
const count = (n: number, noun: string): string => `${n} ${noun}${n === 1 ? '' : 's'}`;

/** `consecutive_5xx` -> `consecutive 5xx`: detector reasons as words. */
const words = (reason: string): string => reason.replaceAll('_', ' ').replaceAll('.', ' ').trim();

const names = (list: unknown): string[] =>
  Array.isArray(list)
    ? list.flatMap((item) =>
        item && typeof item === 'object' && typeof (item as { name?: unknown }).name === 'string'
          ? [(item as { name: string }).name]
          : [],
      )
    : [];

function hostChange(update: {
  address: string;
  weight?: number;
  edsHealth?: HostSpec['edsHealth'];
  metadata?: object;
}): string {
  const parts: string[] = [];
  if (update.weight !== undefined) parts.push(`weight ${update.weight}`);
  if (update.edsHealth !== undefined) parts.push(`discovery health ${update.edsHealth}`);
  if (update.metadata !== undefined) parts.push('metadata');
  return `${update.address} ${parts.join(', ') || 'unchanged'}`;
}

const SUMMARIZERS: Summarizers = {
  'server/bootstrap-loaded': (e) => {
    const resources = (e.bootstrap.static_resources ?? {}) as { clusters?: unknown; listeners?: unknown };
    const clusters = names(resources.clusters);
    const listeners = names(resources.listeners);
    const from = e.sources.length > 0 ? ` from ${e.sources.join(', ')}` : '';
    return about(
      `bootstrap loaded${from} (build ${e.version}): ${count(clusters.length, 'static cluster')}, ${count(listeners.length, 'static listener')}`,
      { clusters, listeners },
    );
  },
  'server/state-changed': (e) => about(`server is now ${e.state}`),
  'server/healthcheck-failed': () =>
    about('inbound health checks now fail (POST /healthcheck/fail): load balancers drain this proxy'),
  'server/healthcheck-ok': () => about('inbound health checks pass again (POST /healthcheck/ok)'),
  'server/shutdown-requested': (e) => about(`shutdown requested: ${e.reason}`),
  'server/hot-restarted': (e) =>
    about(`hot restart: epoch ${e.epoch} took over the listening sockets from epoch ${e.parentEpoch}`),
  'server/hot-restart-parent': (e) =>
    about(`hot restart: parent epoch ${e.epoch} ${e.step} (${count(e.connections, 'connection')} open)`),
  'server/overload-action-changed': (e) =>
    about(`overload action ${e.action} is now ${e.active ? 'active' : 'inactive'}`),
  'server/drain-ended': (e) => about(`drain ended: ${count(e.connectionsLeft, 'connection')} left to close`),
  'cluster/added': (e) =>
    about(
      `cluster ${e.cluster.name} added ${e.addedViaApi ? `by discovery (version ${e.versionInfo || 'none'})` : 'from the bootstrap'}`,
      { clusters: [e.cluster.name] },
    ),
  'cluster/updated': (e) =>
    about(`cluster ${e.cluster.name} updated (version ${e.versionInfo || 'none'})`, {
      clusters: [e.cluster.name],
    }),
  'cluster/removed': (e) =>
    about(`cluster ${e.name} removed (version ${e.versionInfo || 'none'})`, { clusters: [e.name] }),
  'cluster/update-rejected': (e) =>
    about(
      `${e.resource} ${e.name} update rejected (version ${e.versionInfo || 'none'}): ${e.errors[0] ?? 'no reason given'}${e.errors.length > 1 ? ` (and ${e.errors.length - 1} more errors)` : ''}`,
      e.resource.toLowerCase().includes('listener') ? { listeners: [e.name] } : { clusters: [e.name] },
    ),
  'endpoints/hosts-set': (e) => {
    const hosts = e.hosts.map((h) => h.address);
    return about(`cluster ${e.cluster}: members set to ${count(hosts.length, 'host')} (${some(hosts)})`, {
      clusters: [e.cluster],
      hosts,
    });
  },
  'endpoints/hosts-updated': (e) =>
    about(`cluster ${e.cluster}: ${some(e.updates.map(hostChange), 2)}`, {
      clusters: [e.cluster],
      hosts: e.updates.map((u) => u.address),
    }),
  'health/active-changed': (e) =>
    about(
      `cluster ${e.cluster}: host ${e.address} ${e.healthy ? `passes its active health check${e.degraded ? ', degraded' : ' again'}` : 'failed its active health check'}`,
      { clusters: [e.cluster], hosts: [e.address] },
    ),
  'health/outlier-changed': (e) =>
    about(
      e.ejected
        ? `cluster ${e.cluster}: host ${e.address} ejected by outlier detection (${words(e.reason) || 'no reason given'})`
        : `cluster ${e.cluster}: host ${e.address} brought back by outlier detection${e.reason ? ` (${words(e.reason)})` : ''}`,
      { clusters: [e.cluster], hosts: [e.address] },
    ),
  'runtime/modified': (e) => {
    const changes = Object.entries(e.values).map(([k, v]) => (v === '' ? `${k} removed` : `${k}=${v}`));
    return about(`runtime (admin layer): ${some(changes, 4)}`);
  },
  'runtime/layer-loaded': (e) => {
    return about(`runtime layer ${e.layer} loaded: ${count(Object.keys(e.values).length, 'key')}`);
  },
  'listener/bound': (e) =>
    about(`listener ${e.name} bound to ${e.address}${e.port ? ` port ${e.port}` : ''}`, {
      listeners: [e.name],
    }),
  'listener/bind-failed': (e) =>
    about(`listener ${e.name} failed to bind: ${e.error}`, { listeners: [e.name] }),
  'listener/drain-started': (e) => {
    const how = [
      e.graceful ? `graceful, ${e.drainTimeMs / 1000} s` : 'not graceful',
      e.strategy,
      ...(e.inboundOnly ? ['inbound listeners only'] : []),
    ];
    return about(`listeners start draining (${how.join(', ')})`);
  },
  'listener/stopped': (e) => about(`listeners stopped: ${some(e.names, 4)}`, { listeners: e.names }),
  'logging/levels-changed': (e) => {
    const levels = Object.entries(e.levels);
    const distinct = new Set(levels.map(([, level]) => level));
    const text =
      levels.length > 4 && distinct.size === 1
        ? `log level of ${levels.length} loggers set to ${levels[0]?.[1]}`
        : `log levels: ${some(
            levels.map(([name, level]) => `${name}=${level}`),
            4,
          )}`;
    return about(text);
  },
  'stats/counters-reset': () => about('counters reset (POST /reset_counters)'),
  'stats/recent-lookups-enabled': () => about('recent stat-name lookups recorded from now on'),
  'stats/recent-lookups-disabled': () => about('recent stat-name lookups no longer recorded'),
  'stats/recent-lookups-cleared': () => about('recent stat-name lookups cleared'),
  'discovery/clusters': (e) => {
    const changes = [
      ...e.added.map((c) => `${c.name} added`),
      ...e.updated.map((c) => `${c.name} updated`),
      ...e.removed.map((name) => `${name} removed`),
    ];
    return about(`CDS version ${e.versionInfo || 'none'}: ${some(changes, 4)}`, {
      clusters: [...e.added.map((c) => c.name), ...e.updated.map((c) => c.name), ...e.removed],
    });
  },
  'discovery/init-waiting': (e) => about(`initialisation waits for ${some(e.targets, 4)}`),
  'discovery/init-ready': (e) => about(`initialisation no longer waits for ${some(e.targets, 4)}`),
  'discovery/accepted': (e) =>
    about(
      `${e.kind.toUpperCase()} update accepted (version ${e.versionInfo || 'none'}): ${some(e.names, 4)}`,
      {
        clusters: e.kind === 'cds' || e.kind === 'eds' ? e.names : [],
        listeners: e.kind === 'lds' ? e.names : [],
      },
    ),
  'discovery/fetch-timed-out': (e) =>
    about(`${e.kind.toUpperCase()} gave no first answer in time; no longer waited for: ${some(e.names, 4)}`, {
      clusters: e.kind === 'cds' || e.kind === 'eds' ? e.names : [],
      listeners: e.kind === 'lds' ? e.names : [],
    }),
  'listener/added': (e) =>
    about(`listener ${e.listener.name} added by discovery (version ${e.versionInfo || 'none'})`, {
      listeners: [e.listener.name],
    }),
  'listener/removed': (e) =>
    about(
      `listener ${e.name} removed by discovery (version ${e.versionInfo || 'none'}): it drains, then closes`,
      {
        listeners: [e.name],
      },
    ),
  'route/config-set': (e) =>
    about(`route table ${e.routeConfig.name} set (version ${e.versionInfo || 'none'})`),
  'discovery/rejected-again': (e) =>
    about(
      `${e.kind.toUpperCase()} update rejected again ${count(e.count, 'time')} (identical response, version ${e.versionInfo || 'none'}): ${e.error}`,
    ),
  'secret/set': (e) => about(`secret ${e.secret.name} set (version ${e.versionInfo || 'none'})`),
  'secret/removed': (e) => about(`secret ${e.name} removed (version ${e.versionInfo || 'none'})`),
};

/**
 * The summary of one envelope's event. An event of a type this build does not know (a log
 * from a newer proxy) is named by its type and otherwise left alone.
 */
export function summarize(env: Envelope<{ type: string }>): EventSummary {
  const summarizer = (SUMMARIZERS as Record<string, ((event: never) => EventSummary) | undefined>)[
    env.event.type
  ];
  if (!summarizer) return about(`${env.event.type} (an event type this build does not know)`);
  try {
    return summarizer(env.event as never);
  } catch {
    // A line edited by hand may lack fields its type promises: say so rather than fail the page.
    return about(`${env.event.type} (its fields are not as this build expects)`);
  }
}

/** Every event type, for the filter form's choices. */
export const SUMMARIZED_TYPES = Object.keys(SUMMARIZERS) as EventType[];
