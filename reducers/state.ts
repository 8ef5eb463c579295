import { freeze } from 'immer';
import type {
  ApiVersion,
  DiscoveryKind,
  HostSpec,
  JsonObject,
  LogLevel,
  OverloadActionKind,
  RawBootstrap,
  RawCluster,
  RawListener,
  ServerState,
} from '../events/index.js';

/** Where this epoch stands in a chain of hot restarts. */
export interface HotRestartState {
  epoch: number;
  /** When epoch 0 started: `uptime_all_epochs` counts from here. */
  firstStartedAt: number;
  parent: { epoch: number; step: 'handover' | 'draining' | 'drained' | 'exited'; connections: number };
}

/** A member of a cluster with the health verdicts of every checker. */
export interface HostState extends HostSpec {
  failedActiveHc: boolean;
  failedOutlierCheck: boolean;
  /**
   * Added to a cluster with `ignore_new_hosts_until_first_hc` and not checked yet: left out
   * of the balancers' weight and panic counts (the reference's PENDING_ACTIVE_HC, excluded).
   */
  pendingActiveHc?: boolean;
  /**
   * Gone from discovery but kept while it passes its active checks (the reference's
   * PENDING_DYNAMIC_REMOVAL, without `drain_connections_on_host_removal`): removed when it fails one.
   */
  pendingDynamicRemoval?: boolean;
  /** An active check passes but the host says it is degraded: used after the healthy members. */
  degradedActiveHc?: boolean;
  /** When the active checks' verdict last changed (`health/active-changed`); absent before any change. */
  activeHcChangedAt?: number;
  /**
   * The last ejection by outlier detection (`health/outlier-changed`): when and why, and when
   * the host came back (absent while still ejected). Absent on a host never ejected.
   */
  lastEjection?: Ejection;
}

export interface Ejection {
  at: number;
  reason: string;
  endedAt?: number;
}

export interface ClusterEntry {
  name: string;
  config: RawCluster;
  addedViaApi: boolean;
  versionInfo: string;
  /** `at` of the event that last changed the config (config_dump `last_updated`). */
  lastUpdated: number;
  /** Members in discovery order; `address` is the identity. */
  hosts: HostState[];
  /**
   * A discovered EDS cluster before its first endpoints (or its initial fetch timeout):
   * `dynamic_warming_clusters` in config_dump. Absent when false.
   */
  warming?: true;
}

export interface ListenerEntry {
  name: string;
  config: RawListener;
  lastUpdated: number;
  /** `ip:port` as bound (the real port when the config says 0), null before binding. */
  boundAddress: string | null;
  state: 'pending' | 'active' | 'draining' | 'stopped' | 'failed';
  error: string | null;
  /** Set for a listener from listener discovery, with the version that last changed it. */
  discovered?: { versionInfo: string };
}

/** A route table from route discovery. */
export interface RouteConfigEntry {
  name: string;
  config: JsonObject;
  versionInfo: string;
  lastUpdated: number;
}

/** A secret from secret discovery (its key material redacted in every output). */
export type SecretEntry = RouteConfigEntry;

export interface RuntimeLayer {
  name: string;
  kind: 'static' | 'disk' | 'admin';
  values: Record<string, string>;
}

export interface RejectedUpdate {
  seq: number;
  at: number;
  resource: string;
  name: string;
  versionInfo: string;
  errors: string[];
  /** Identical copies of the same response rejected after this one (`discovery/rejected-again`). */
  repeats?: number;
}

export interface State {
  /** Sequence number of the last envelope folded in; 0 before any. */
  seq: number;
  /** Store time of the last envelope folded in. */
  at: number;
  server: {
    state: ServerState;
    healthCheckFailed: boolean;
    /** `at` of the bootstrap-loaded event: uptimes count from here. */
    startedAt: number;
    version: string;
    options: JsonObject;
    shutdownRequested: boolean;
    /** Set by `server/hot-restarted` in an epoch above 0; absent in epoch 0. */
    hotRestart?: HotRestartState;
    /** The overload actions now active (`server/overload-action-changed`); absent while none is. */
    overload?: Partial<Record<OverloadActionKind, true>>;
  };
  bootstrap: {
    config: RawBootstrap;
    /**
     * The version it was written in: `/config_dump` shows its resources in it. Absent is v2, so an
     * event log recorded before the loader noted it replays to the same snapshot, byte for byte.
     */
    apiVersion?: ApiVersion;
    sources: string[];
    lastUpdated: number;
  } | null;
  /** `version_info` of the last cluster discovery update; `static` without discovery. */
  clusterManager: { versionInfo: string };
  clusters: Record<string, ClusterEntry>;
  listeners: Record<string, ListenerEntry>;
  runtime: { layers: RuntimeLayer[] };
  logging: { levels: Record<string, LogLevel> };
  stats: {
    recentLookupsEnabled: boolean;
    /** Bumped by each reset so stat readers know to re-base counters. */
    countersResetSeq: number;
    recentLookupsClearedSeq: number;
  };
  drain: {
    active: boolean;
    inboundOnly: boolean;
    graceful: boolean;
    strategy: 'gradual' | 'immediate';
    startedAt: number;
    drainTimeMs: number;
  };
  rejected: RejectedUpdate[];
  /** xDS: the version each kind last accepted, and the route tables discovered. */
  discovery: {
    /** CDS's version is `clusterManager.versionInfo`, its one home. */
    versions: Partial<Record<Exclude<DiscoveryKind, 'cds'>, string>>;
    routes: Record<string, RouteConfigEntry>;
    /** Secrets from SDS by name; a TLS context naming one by an `sds_config` serves it. */
    secrets: Record<string, SecretEntry>;
    /** Initialisation targets still waited for (`/init_dump`): `cds:*`, `eds:<service>`, ... */
    waiting: string[];
  };
}

/**
 * The state before any event, shared by every store and replay: frozen to the leaves, so a
 * fold that edited it instead of copying would throw rather than leak into the next store.
 */
export const initialState: State = freeze<State>(
  {
    seq: 0,
    at: 0,
    server: {
      state: 'PRE_INITIALIZING',
      healthCheckFailed: false,
      startedAt: 0,
      version: '',
      options: {},
      shutdownRequested: false,
    },
    bootstrap: null,
    clusterManager: { versionInfo: 'static' },
    clusters: {},
    listeners: {},
    runtime: { layers: [] },
    logging: { levels: {} },
    stats: {
      recentLookupsEnabled: false,
      countersResetSeq: 0,
      recentLookupsClearedSeq: 0,
    },
    drain: {
      active: false,
      inboundOnly: false,
      graceful: false,
      strategy: 'gradual',
      startedAt: 0,
      drainTimeMs: 0,
    },
    rejected: [],
    discovery: { versions: {}, routes: {}, secrets: {}, waiting: [] },
  },
  true,
);
