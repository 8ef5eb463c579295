/**
 * Discovered clusters and listeners whose TLS contexts name secrets SDS has yet to send wait for
 * them before they are applied, as the reference's init manager warms them: a new one is not
 * used yet, a changed one keeps serving as it was. A changed listener also waits for the route
 * tables its connection managers take from RDS (a new one is applied at once and answers 404
 * until they come): applied at once, it answered 404 to every request between its update and
 * its table's. Each waits until everything it names has arrived, or the source's
 * `initial_fetch_timeout` passed (then it is applied as it is, refusing handshakes until the
 * secrets come, as bootstrap ones do). What they name is subscribed meanwhile (`wants`).
 */
import type { JsonObject } from '../../../events/config.js';
import type { State } from '../../../reducers/index.js';
import { entryOf } from '../../../reducers/names.js';
import { configSourceOf } from '../../config/config-source.js';
import { rdsNamesOf } from '../../config/rds-names.js';
import { clusterSdsRefs, listenerSdsRefs, type SdsRef } from '../../config/sds-refs.js';
import type { Loggers } from '../../logging/loggers.js';
import type { DecodedResource } from './resources.js';

export type WaitingKind = 'cds' | 'lds';

/** A resource held for what it names, with the version it came at. */
export interface Held extends DecodedResource {
  version: string;
}

interface Entry extends Held {
  timer: NodeJS.Timeout | null;
}

/** Something a held resource waits for: a secret, or a route table. */
interface Need {
  what: 'secret' | 'route table';
  name: string;
  configSource: JsonObject;
}

const secretNeeds = (refs: SdsRef[]): Need[] =>
  refs.map((ref) => ({ what: 'secret', name: ref.name, configSource: ref.configSource }));

function needsOf(kind: WaitingKind, resource: DecodedResource, state: State): Need[] {
  if (kind === 'cds') return secretNeeds(clusterSdsRefs(resource.config));
  const needs = secretNeeds(listenerSdsRefs(resource.config));
  if (entryOf(state.listeners, resource.name))
    for (const table of rdsNamesOf(resource.config))
      needs.push({ what: 'route table', name: table.name, configSource: table.configSource });
  return needs;
}

const present = (need: Need, state: State): boolean =>
  need.what === 'secret'
    ? Boolean(state.discovery.secrets[need.name])
    : entryOf(state.discovery.routes, need.name) !== undefined;

const NAMES: Record<WaitingKind, string> = { cds: 'cluster', lds: 'listener' };

export class Warming {
  private readonly held: Record<WaitingKind, Map<string, Entry>> = { cds: new Map(), lds: new Map() };
  /** Moves each time the held set changes: the subscriptions follow it. */
  generation = 0;

  constructor(
    /** Applies resources whose wait is over. */
    private readonly release: (kind: WaitingKind, resources: Held[]) => void,
    private readonly log: ReturnType<Loggers['get']>,
  ) {}

  /**
   * Holds `resource` when a secret it names by SDS (or, a changed listener, a route table it
   * names by RDS) is not in `state` yet (true); else forgets any earlier copy held (false), so it
   * is applied now.
   */
  hold(kind: WaitingKind, resource: DecodedResource, version: string, state: State): boolean {
    const missing = needsOf(kind, resource, state).filter((need) => !present(need, state));
    if (missing.length === 0) {
      this.drop(kind, [resource.name]);
      return false;
    }
    this.drop(kind, [resource.name]);
    const timeoutMs = Math.max(
      ...missing.map((need) => configSourceOf(need.configSource)?.initialFetchTimeoutMs ?? 0),
    );
    const timer =
      timeoutMs > 0
        ? setTimeout(() => {
            this.log.warn(
              { kind, name: resource.name },
              `${kind}: ${NAMES[kind]} '${resource.name}' applied without ${missing.map((n) => `${n.what} '${n.name}'`).join(', ')} after ${timeoutMs} ms`,
            );
            this.releaseNow(kind, [resource.name]);
          }, timeoutMs)
        : null;
    timer?.unref();
    this.held[kind].set(resource.name, { ...resource, version, timer });
    this.generation++;
    this.log.info(
      { kind, version },
      `${kind}: ${NAMES[kind]} '${resource.name}' waits for ${missing.map((n) => `${n.what} '${n.name}'`).join(', ')}`,
    );
    return true;
  }

  /** Forgets held resources (removed, replaced, or left out of a state-of-the-world response). */
  drop(kind: WaitingKind, names: Iterable<string>): void {
    for (const name of names) {
      const entry = this.held[kind].get(name);
      if (!entry) continue;
      if (entry.timer) clearTimeout(entry.timer);
      this.held[kind].delete(name);
      this.generation++;
    }
  }

  /** Keeps only the held resources named (a state-of-the-world response names every one there is). */
  keepOnly(kind: WaitingKind, named: ReadonlySet<string>): void {
    this.drop(
      kind,
      [...this.held[kind].keys()].filter((name) => !named.has(name)),
    );
  }

  /** The configs held, whose secrets and route tables are subscribed. */
  configs(kind: WaitingKind): JsonObject[] {
    return [...this.held[kind].values()].map((entry) => entry.config);
  }

  /** Applies the held resources whose every need is in `state` now. */
  check(state: State): void {
    for (const kind of ['cds', 'lds'] as const) {
      const ready = [...this.held[kind].values()]
        .filter((entry) => needsOf(kind, entry, state).every((need) => present(need, state)))
        .map((entry) => entry.name);
      if (ready.length > 0) this.releaseNow(kind, ready);
    }
  }

  private releaseNow(kind: WaitingKind, names: string[]): void {
    const entries = names.flatMap((name) => this.held[kind].get(name) ?? []);
    this.drop(kind, names);
    if (entries.length === 0) return;
    this.release(
      kind,
      entries.map(({ name, config, version }) => ({ name, config, version })),
    );
  }

  close(): void {
    for (const kind of ['cds', 'lds'] as const) this.drop(kind, [...this.held[kind].keys()]);
  }
}
