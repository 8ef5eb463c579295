import type { Observable } from 'rxjs';
import type { ClusterEntry, State } from '../../reducers/index.js';

/**
 * What a follower of the clusters does as snapshots come: each callback gets the cluster's
 * entry and the value the follower keeps for it (a checker, a resolver, a balancer; or
 * undefined for a cluster it has nothing to do with) and returns the value to keep.
 */
export interface ClusterFollower<T> {
  /** A cluster the follower has not seen. */
  added(name: string, entry: ClusterEntry, state: State): T;
  /** The cluster's entry is a new object (its config, members or health moved), or `restart` asked. */
  changed(name: string, entry: ClusterEntry, kept: T, state: State): T;
  /** The cluster left the snapshot. */
  removed(name: string, kept: T): void;
  /**
   * Read once per snapshot, before any cluster: true makes every cluster `changed`, even one
   * whose entry kept its identity (the cluster manager's runtime panic threshold).
   */
  restart?(state: State): boolean;
  /** After each snapshot, once every cluster is followed: how many are. */
  settled?(count: number): void;
  /**
   * Where a snapshot that could not be followed is reported; the next one is followed again.
   * Without it RxJS reports the error as an uncaught exception (thrown from a timer).
   */
  failed?(err: unknown): void;
}

/** The running follow: the values kept, by cluster name. */
export interface FollowedClusters<T> {
  get(name: string): T | undefined;
  values(): IterableIterator<T>;
  readonly size: number;
  /** Stops following; the values stay, for the caller to stop. */
  close(): void;
}

/**
 * The one "follow `state$`, reconcile the clusters" loop: calls `added`, `changed` and
 * `removed` as the clusters of each snapshot differ from the last one's, by entry identity,
 * so an unchanged cluster costs one comparison.
 */
export function followClusters<T>(
  store: { readonly state$: Observable<State> },
  follower: ClusterFollower<T>,
): FollowedClusters<T> {
  const followed = new Map<string, { entry: ClusterEntry; kept: T }>();

  function follow(state: State): void {
    const restart = follower.restart?.(state) === true;
    for (const [name, entry] of Object.entries(state.clusters)) {
      const seen = followed.get(name);
      if (!seen) followed.set(name, { entry, kept: follower.added(name, entry, state) });
      else if (seen.entry !== entry || restart)
        followed.set(name, { entry, kept: follower.changed(name, entry, seen.kept, state) });
    }
    for (const [name, seen] of followed) {
      if (state.clusters[name] !== undefined) continue;
      followed.delete(name);
      follower.removed(name, seen.kept);
    }
    follower.settled?.(followed.size);
  }

  const failed = follower.failed;
  const subscription = store.state$.subscribe(
    failed
      ? (state) => {
          try {
            follow(state);
          } catch (err) {
            failed(err);
          }
        }
      : follow,
  );
  return {
    get: (name) => followed.get(name)?.kept,
    *values() {
      for (const seen of followed.values()) yield seen.kept;
    },
    get size() {
      return followed.size;
    },
    close: () => subscription.unsubscribe(),
  };
}
