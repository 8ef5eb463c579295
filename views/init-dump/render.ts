import type { State } from '../../reducers/state.js';
import { json, type ViewResult } from '../result.js';

/** Components `/init_dump?mask=` can name. */
export const INIT_COMPONENTS = ['cluster', 'listener'] as const;
export type InitComponent = (typeof INIT_COMPONENTS)[number];

const AWAITS_DISCOVERY = new Set(['STRICT_DNS', 'LOGICAL_DNS', 'EDS']);

/** The reference's names of the discovery subscriptions initialisation waits for. */
const SUBSCRIPTION: Record<string, (name: string) => string> = {
  cds: () => 'CdsApi',
  lds: () => 'LdsApi',
  rds: (name) => `RdsRouteConfigSubscription ${name}`,
  sds: (name) => `SdsApi ${name}`,
};

function discoveryTargets(state: State, kinds: string[]): string[] {
  return state.discovery.waiting.flatMap((target) => {
    const [kind = '', name = ''] = target.split(/:(.*)/s);
    const label = SUBSCRIPTION[kind];
    return kinds.includes(kind) && label ? [label(name)] : [];
  });
}

/** Targets initialisation still waits for, per component. */
export function unreadyTargets(state: State): Record<InitComponent, string[]> {
  return {
    // A name-resolved or discovered cluster is ready once its first member set arrives.
    cluster: Object.values(state.clusters)
      .filter(
        (c) => AWAITS_DISCOVERY.has(String(c.config.type ?? 'STATIC').toUpperCase()) && c.hosts.length === 0,
      )
      .map((c) => `cluster ${c.name}`)
      .concat(discoveryTargets(state, ['cds', 'sds']))
      .sort(),
    listener: Object.values(state.listeners)
      .filter((l) => l.state === 'pending')
      .map((l) => `listener ${l.name}`)
      .concat(discoveryTargets(state, ['lds', 'rds']))
      .sort(),
  };
}

/**
 * `/init_dump`: `unready_targets_dumps`, one entry per component with unready targets
 * (`{}` when everything is ready); with `mask`, only that component.
 */
export function renderInitDump(state: State, mask: InitComponent | null): ViewResult {
  const targets = unreadyTargets(state);
  const dumps = INIT_COMPONENTS.filter((c) => (mask === null || c === mask) && targets[c].length > 0).map(
    (c) => ({
      name: `${c}s`,
      target_names: targets[c],
    }),
  );
  return json(dumps.length > 0 ? { unready_targets_dumps: dumps } : {});
}
