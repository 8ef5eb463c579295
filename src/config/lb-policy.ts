/**
 * v3's typed `load_balancing_policy` (Envoy Gateway writes every cluster's balancer so): the
 * first policy of the list this build has, as the reference picks, lowered onto the fields
 * the balancers already read (`lb_policy`, `least_request_lb_config`, `ring_hash_lb_config`,
 * `common_lb_config`'s locality settings), so the compile step and the data plane read one
 * place, as `v3-cluster.ts` does for the HTTP options. A setting of a policy that no balancer
 * here honours is refused by name; so is a list with no policy this build has.
 */
import type { JsonObject } from '../../events/index.js';
import { arrayOf, objectOf } from '../../reducers/settings/values.js';
import { acting, checkFields, type FieldTable, notYet } from '../bootstrap/honoured.js';
import { fieldPath, type Report } from '../bootstrap/report.js';

const PREFIX = 'envoy.extensions.load_balancing_policies.';

const LOCALITY_FIELDS: FieldTable = acting('zone_aware_lb_config', 'locality_weighted_lb_config');
const SLOW_START = notYet('slow start (slow_start_config)');
const CONSISTENT_HASHING = notYet('consistent_hashing_lb_config');
const HASH_LOCALITIES = notYet('locality weights for the hash balancers (locality_weighted_lb_config)');

/** Each policy: the `lb_policy` it is, its fields, and the cluster fields they move to. */
const POLICIES: Record<string, { lbPolicy: string; fields: FieldTable; moves: Record<string, string[]> }> = {
  'least_request.v3.LeastRequest': {
    lbPolicy: 'LEAST_REQUEST',
    fields: {
      ...acting('choice_count', 'locality_lb_config'),
      slow_start_config: SLOW_START,
      enable_full_scan: notYet('enable_full_scan'),
    },
    moves: { choice_count: ['least_request_lb_config', 'choice_count'] },
  },
  'round_robin.v3.RoundRobin': {
    lbPolicy: 'ROUND_ROBIN',
    fields: { ...acting('locality_lb_config'), slow_start_config: SLOW_START },
    moves: {},
  },
  'random.v3.Random': { lbPolicy: 'RANDOM', fields: acting('locality_lb_config'), moves: {} },
  'ring_hash.v3.RingHash': {
    lbPolicy: 'RING_HASH',
    fields: {
      ...acting('hash_function', 'minimum_ring_size', 'maximum_ring_size'),
      locality_weighted_lb_config: HASH_LOCALITIES,
      use_hostname_for_hashing: notYet('use_hostname_for_hashing (hosts hashed by name)'),
      hash_balance_factor: notYet('hash_balance_factor (bounded load)'),
      consistent_hashing_lb_config: CONSISTENT_HASHING,
    },
    moves: {
      hash_function: ['ring_hash_lb_config', 'hash_function'],
      minimum_ring_size: ['ring_hash_lb_config', 'minimum_ring_size'],
      maximum_ring_size: ['ring_hash_lb_config', 'maximum_ring_size'],
    },
  },
  'maglev.v3.Maglev': {
    lbPolicy: 'MAGLEV',
    fields: {
      locality_weighted_lb_config: HASH_LOCALITIES,
      table_size: notYet('a Maglev table_size (the table has 65,537 entries)'),
      consistent_hashing_lb_config: CONSISTENT_HASHING,
    },
    moves: {},
  },
};

/** The field tables of this step, by the message name its findings use (docs/bootstrap.md lists them). */
export const FIELD_TABLES = {
  LeastRequest: POLICIES['least_request.v3.LeastRequest']!.fields,
  RoundRobin: POLICIES['round_robin.v3.RoundRobin']!.fields,
  RingHash: POLICIES['ring_hash.v3.RingHash']!.fields,
  Maglev: POLICIES['maglev.v3.Maglev']!.fields,
  LocalityLbConfig: LOCALITY_FIELDS,
};

/** The policy an entry names: by its config's `@type`, else by its `envoy.`/`proxy.` name. */
function policyOf(entry: JsonObject): string | undefined {
  const config = objectOf(entry.typed_config);
  const url = typeof config['@type'] === 'string' ? config['@type'] : '';
  const type = url.slice(url.lastIndexOf('/') + 1);
  if (type.startsWith(PREFIX) && POLICIES[type.slice(PREFIX.length)]) return type.slice(PREFIX.length);
  const name = typeof entry.name === 'string' ? entry.name.replace(/^proxy\./, 'envoy.') : '';
  return Object.keys(POLICIES).find(
    (key) => name === `envoy.load_balancing_policies.${key.slice(0, key.indexOf('.'))}`,
  );
}

/** Sets `cluster[field][...]`, refusing one the cluster sets itself (one place for each setting). */
function move(
  cluster: JsonObject,
  to: string[],
  value: JsonObject[string],
  from: string,
  report: Report,
): void {
  const [field, inner] = to as [string, string | undefined];
  if (inner === undefined) {
    if (cluster[field] !== undefined)
      report.error(from, `the cluster sets ${field} too: set it in one place`);
    else cluster[field] = value;
    return;
  }
  const holder = { ...objectOf(cluster[field]) };
  if (holder[inner] !== undefined)
    report.error(from, `the cluster sets ${field}.${inner} too: set it in one place`);
  holder[inner] = value;
  cluster[field] = holder;
}

/** Lowers `cluster.load_balancing_policy` (at `path`) onto the fields its balancer reads. */
export function lowerLoadBalancingPolicy(
  cluster: JsonObject,
  path: string,
  report: Report,
  written?: Map<string, string>,
): void {
  if (cluster.load_balancing_policy === undefined) return;
  const at = fieldPath(path, 'load_balancing_policy');
  const policies = arrayOf(objectOf(cluster.load_balancing_policy).policies);
  delete cluster.load_balancing_policy;
  const index = policies.findIndex(
    (p) => policyOf(objectOf(objectOf(p).typed_extension_config)) !== undefined,
  );
  if (index < 0) {
    report.unsupported(
      at,
      `none of its policies is implemented (least_request, round_robin, random, ring_hash and maglev are)`,
    );
    return;
  }
  const entryAt = `${at}.policies[${index}].typed_extension_config`;
  const entry = objectOf(objectOf(policies[index]).typed_extension_config);
  const key = policyOf(entry) as string;
  const policy = POLICIES[key] as (typeof POLICIES)[string];
  const config = objectOf(entry.typed_config);
  const configAt = `${entryAt}.typed_config`;
  checkFields(config, configAt, report, policy.fields, key.slice(key.lastIndexOf('.') + 1));
  if (cluster.lb_policy !== undefined && cluster.lb_policy !== 'LOAD_BALANCING_POLICY_CONFIG')
    report.error(fieldPath(path, 'lb_policy'), `set with load_balancing_policy: set one`);
  cluster.lb_policy = policy.lbPolicy;
  written?.set(fieldPath(path, 'lb_policy'), at);
  for (const [field, to] of Object.entries(policy.moves))
    if (config[field] !== undefined) {
      move(cluster, to, config[field], `${configAt}.${field}`, report);
      written?.set(fieldPath(path, to.join('.')), `${configAt}.${field}`);
    }
  const locality = config.locality_lb_config;
  if (locality !== undefined)
    checkFields(
      objectOf(locality),
      `${configAt}.locality_lb_config`,
      report,
      LOCALITY_FIELDS,
      'LocalityLbConfig',
    );
  for (const [field, value] of Object.entries(objectOf(locality))) {
    const from = `${configAt}.locality_lb_config.${field}`;
    move(cluster, ['common_lb_config', field], value, from, report);
    written?.set(fieldPath(path, `common_lb_config.${field}`), from);
  }
}
