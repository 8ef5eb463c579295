/**
 * Property test of the xDS client (issue 25, item 5, fuzz suite): random and mutated CDS, LDS,
 * EDS and RDS DiscoveryResponses (valid seeds with null, mistyped, huge or unknown fields, bad
 * type URLs, broken `Any` bytes, duplicate and static names) through each source, a real gRPC
 * management server (ADS, v3), a real REST server and a real file, into one client each. Every
 * response is answered (gRPC and REST: the ACK or NACK of its nonce or poll; file: exactly one
 * of update_success, update_rejected, update_failure in the subscription's scope), a refused
 * one leaves what discovery of its kind holds exactly as it was, an accepted CDS or LDS one
 * leaves exactly its resources (RDS: at least its tables), a response made only of valid,
 * distinct resources is accepted and one with an invalid resource refused, and nothing ends
 * the process. Fixed seed; `FUZZ_RUNS` raises the run count (`npm run fuzz`).
 */
import assert from 'node:assert/strict';
import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { after, describe, it } from 'node:test';
import fc from 'fast-check';
import type { JsonObject } from '../../../events/index.js';
import { TYPE_URLS, type WireResource } from '../../../src/edges/xds/types.js';
import { replaceFile } from '../../helpers/replace-file.js';
import {
  type DrivenKind,
  STATIC_NAME,
  servedClient,
  servedDeltaClient,
  startXdsClient,
  validResource,
  WATCHED,
  type XdsClientHarness,
  xdsBootstrap,
} from '../../helpers/xds-client.js';
import { until } from '../../helpers/xds-fixtures.js';
import { wireResource } from '../../helpers/xds-server.js';

const RUNS = Number(process.env.FUZZ_RUNS ?? 25);

/** What the fuzz needs of each kind: its names, fields to mutate, invalid seeds and stat scope. */
interface Fuzzed {
  kind: DrivenKind;
  /** Names the resources draw from, so duplicates are frequent; the static one is invalid. */
  names: string[];
  /** Fields a mutation replaces (random keys too). */
  fields: string[];
  /** Fields that make a valid resource invalid (refused whole), on the wire and as JSON. */
  bad: JsonObject[];
  /** Invalid fields that do not encode (a negative duration, an unknown enum): as JSON only. */
  badJsonOnly: JsonObject[];
  /** The subscription's stat scope. */
  scope: string;
  /** Whether an accepted response leaves exactly its resources (SotW CDS, LDS) or adds them (RDS). */
  owns: 'exactly' | 'at least' | 'none';
}

const port = (port_value: number): JsonObject => ({ socket_address: { address: '127.0.0.1', port_value } });
const badAssignment = (extra: JsonObject): JsonObject => ({
  endpoints: [{ lb_endpoints: [{ endpoint: { address: port(1) }, ...extra }] }],
});
const badRoute = (route: JsonObject): JsonObject => ({
  virtual_hosts: [{ name: 'all', domains: ['*'], routes: [{ match: { prefix: '/' }, ...route }] }],
});

const KINDS: Fuzzed[] = [
  {
    kind: 'cds',
    names: ['a', 'b', 'web', 'xds_cluster'],
    fields: ['name', 'type', 'connect_timeout', 'load_assignment', 'lb_policy'],
    bad: [{ connect_timeout: '0s' }, { connect_timeout: '0s', lb_policy: 'RANDOM' }],
    badJsonOnly: [{ connect_timeout: '-1s' }, { lb_policy: 'NOPE' }],
    scope: 'cluster_manager.cds',
    owns: 'exactly',
  },
  {
    kind: 'lds',
    names: ['a', 'b', 'web', 'front'],
    fields: ['name', 'address', 'filter_chains', 'listener_filters', 'per_connection_buffer_limit_bytes'],
    bad: [{ address: port(70_000) }, { filter_chains: [] }],
    badJsonOnly: [{ filter_chains: [{ filters: [{ name: 'envoy.filters.network.nope' }] }] }],
    scope: 'listener_manager.lds',
    owns: 'exactly',
  },
  {
    kind: 'eds',
    names: ['svc', 'a', 'b'],
    fields: ['cluster_name', 'endpoints', 'policy', 'named_endpoints'],
    bad: [
      badAssignment({ endpoint: { address: port(70_000) } }),
      badAssignment({ load_balancing_weight: 0 }),
    ],
    badJsonOnly: [badAssignment({ health_status: 'NOPE' })],
    scope: 'cluster.svc',
    owns: 'none',
  },
  {
    kind: 'rds',
    names: ['r', 'a', 'b'],
    fields: ['name', 'virtual_hosts', 'validate_clusters', 'request_headers_to_add'],
    bad: [
      badRoute({}),
      badRoute({ direct_response: { status: 7 } }),
      { virtual_hosts: [{ name: 'v', domains: [] }] },
    ],
    badJsonOnly: [],
    scope: 'http.front.rds.r',
    owns: 'at least',
  },
];

/** One resource and what it must do to the response: break it, let it through, or either. */
interface Res<T> {
  value: T;
  name: string | null;
  expect: 'valid' | 'invalid' | 'unknown';
}

/** What the whole response must get, and the clusters an accepted one leaves. */
function expectation(resources: Array<Res<unknown>>): {
  expect: 'accept' | 'refuse' | 'either';
  names: string[];
} {
  const names = resources.map((r) => r.name).filter((n): n is string => n !== null);
  if (resources.some((r) => r.expect === 'invalid') || new Set(names).size < names.length)
    return { expect: 'refuse', names };
  return { expect: resources.every((r) => r.expect === 'valid') ? 'accept' : 'either', names };
}

const odd = fc.oneof(
  fc.jsonValue({ maxDepth: 2 }),
  fc.constantFrom(null, -1, 1.5, 2 ** 53, 2 ** 64, 1e308, '', 'x'.repeat(2000), [], {}, '__proto__', true, {
    __proto__: null,
  }),
);

/** The arbitraries of one kind: resources as JSON and off the wire, and whole JSON responses. */
function arbitraries(k: Fuzzed) {
  const url = TYPE_URLS.V3[k.kind];
  const otherUrl = TYPE_URLS.V3[k.kind === 'lds' ? 'cds' : 'lds'];
  const nameKey = k.kind === 'eds' ? 'cluster_name' : 'name';
  const name = fc.constantFrom(...k.names);
  const validity = (n: string): 'valid' | 'invalid' => (n === STATIC_NAME[k.kind] ? 'invalid' : 'valid');
  const typed = (c: JsonObject): JsonObject => ({ '@type': url, ...c });
  const seed = (n: string, extra: JsonObject = {}) => validResource(k.kind, n, extra);

  /** A resource as JSON (file, REST): valid, invalid, odd, mistyped or with one field replaced. */
  const jsonResource: fc.Arbitrary<Res<unknown>> = fc.oneof(
    {
      weight: 4,
      arbitrary: name.map((n): Res<unknown> => ({ value: typed(seed(n)), name: n, expect: validity(n) })),
    },
    fc.tuple(name, fc.constantFrom(...k.bad, ...k.badJsonOnly)).map(([n, bad]) => ({
      value: typed(seed(n, bad)),
      name: n,
      expect: 'invalid' as const,
    })),
    odd.map((value) => ({ value, name: null, expect: 'unknown' as const })),
    fc
      .constantFrom(null, 1, 'x', [], true)
      .map((value) => ({ value, name: null, expect: 'invalid' as const })),
    fc
      .tuple(
        name,
        fc.constantFrom(otherUrl, TYPE_URLS.V2[k.kind], 'type.googleapis.com/nope', 5, null, undefined),
      )
      .map(([n, bad]) => ({ value: { ...seed(n), '@type': bad }, name: null, expect: 'invalid' as const })),
    fc.tuple(name, fc.oneof(fc.constantFrom(...k.fields), fc.string()), odd).map(([n, key, value]) => ({
      value: { ...typed(seed(n)), [key]: value },
      name: key === nameKey ? null : n,
      expect: 'unknown' as const,
    })),
  );

  /** A whole response as JSON, and what it must get. */
  const jsonResponse = fc.oneof(
    {
      weight: 8,
      arbitrary: fc
        .tuple(
          fc.oneof({ weight: 9, arbitrary: fc.string({ maxLength: 8 }) }, odd),
          fc.array(jsonResource, { maxLength: 4 }),
        )
        .map(([version, resources]) => {
          const shapeOk = typeof version === 'string';
          const e = expectation(resources);
          return {
            body: { version_info: version, resources: resources.map((r) => r.value) } as unknown,
            ...e,
            expect: shapeOk ? e.expect : ('refuse' as const),
          };
        }),
    },
    odd.map((resources) => ({
      body: { version_info: 'odd', resources } as unknown,
      names: [],
      expect: 'either' as const,
    })),
    odd.map((body) => ({ body, names: [], expect: 'either' as const })),
  );

  const wire = (n: string, extra: JsonObject = {}) => wireResource(k.kind, seed(n, extra), 'V3');
  /** A resource off the wire: valid, invalid, mistyped, random bytes, or a valid one damaged. */
  const wireRes: fc.Arbitrary<Res<WireResource>> = fc.oneof(
    { weight: 4, arbitrary: name.map((n) => ({ value: wire(n), name: n, expect: validity(n) })) },
    fc.tuple(name, fc.constantFrom(...k.bad)).map(([n, bad]) => ({
      value: wire(n, bad),
      name: n,
      expect: 'invalid' as const,
    })),
    fc
      .tuple(name, fc.constantFrom(TYPE_URLS.V2[k.kind], otherUrl, 'type.googleapis.com/nope', ''))
      .map(([n, bad]) => ({ value: { ...wire(n), type_url: bad }, name: null, expect: 'invalid' as const })),
    fc
      .uint8Array({ maxLength: 64 })
      .map((value) => ({ value: { type_url: url, value }, name: null, expect: 'unknown' as const })),
    fc.tuple(name, fc.nat(), fc.integer({ min: 0, max: 255 }), fc.boolean()).map(([n, at, byte, cut]) => {
      const value = Uint8Array.from(wire(n).value);
      const i = at % value.length;
      const damaged = cut ? value.slice(0, i) : value.map((b, j) => (j === i ? byte : b));
      return { value: { type_url: url, value: damaged }, name: null, expect: 'unknown' as const };
    }),
  );
  return { typed, jsonResponse, wireRes };
}

/** Checks one answer against the case: the state after it, and the expected verdict. */
function check(
  k: Fuzzed,
  h: XdsClientHarness,
  before: string,
  verdict: 'accepted' | 'refused',
  c: { expect: 'accept' | 'refuse' | 'either'; names: string[] },
  what: string,
): void {
  if (c.expect === 'accept') assert.equal(verdict, 'accepted', `${what} must be accepted`);
  if (c.expect === 'refuse') assert.equal(verdict, 'refused', `${what} must be refused`);
  if (verdict === 'refused') assert.equal(h.state(k.kind), before, `${what}: refused, yet the state changed`);
  else if (c.expect === 'accept' && k.owns !== 'none') {
    const now = (JSON.parse(h.state(k.kind)) as Array<[string]>).map(([n]) => n).sort();
    const names = [...new Set(c.names)].sort();
    if (k.owns === 'exactly') assert.deepEqual(now, names, `${what}: accepted, its resources are the state`);
    else
      for (const n of names) assert.ok(now.includes(n), `${what}: accepted, yet '${n}' is not in the state`);
  }
}

const stat = (h: XdsClientHarness, k: Fuzzed, name: string) => h.counter(`${k.scope}.${name}`);
const outcomes = (h: XdsClientHarness, k: Fuzzed) =>
  stat(h, k, 'update_success') + stat(h, k, 'update_rejected') + stat(h, k, 'update_failure');

for (const k of KINDS) {
  const { typed, jsonResponse, wireRes } = arbitraries(k);
  const KIND = k.kind.toUpperCase();
  describe(`xDS client fuzz: random and mutated ${KIND} responses from each source`, () => {
    it('over gRPC (ADS, v3): every response ACKed or NACKed, state unchanged on a NACK', async () => {
      const { xds, h, close } = await servedClient('grpc', 'start', k.kind);
      try {
        let nonce = 1000;
        await fc.assert(
          fc.asyncProperty(
            fc.string({ maxLength: 8 }),
            fc.array(wireRes, { maxLength: 4 }),
            async (version, resources) => {
              const before = h.state(k.kind);
              const n = String(nonce++);
              const from = xds.requests.length;
              xds.sendRaw(k.kind, {
                version_info: version,
                resources: resources.map((r) => r.value),
                type_url: TYPE_URLS.V3[k.kind],
                nonce: n,
              });
              const answer = await xds.waitFor((r) => r.response_nonce === n, 10_000, from);
              check(
                k,
                h,
                before,
                answer.error_detail ? 'refused' : 'accepted',
                expectation(resources),
                `gRPC ${KIND} response ${n}`,
              );
              if (!answer.error_detail) assert.equal(answer.version_info, version);
            },
          ),
          { numRuns: RUNS, seed: 25 },
        );
        assert.ok(xds.streams > 0, 'the stream is still up');
      } finally {
        await close();
      }
    });

    it('over delta gRPC (ADS, v3): every response ACKed or NACKed, state unchanged on a NACK', async () => {
      const { xds, h, close } = await servedDeltaClient(k.kind);
      try {
        let nonce = 1000;
        await fc.assert(
          fc.asyncProperty(
            fc.array(fc.tuple(wireRes, fc.constantFrom(...k.names, '')), { maxLength: 4 }),
            fc.array(fc.constantFrom(...k.names), { maxLength: 2 }),
            async (sent, removed) => {
              const before = h.state(k.kind);
              const n = String(nonce++);
              const from = xds.requests.length;
              // A resource whose name was read is sent under it; one that was not, under any name.
              const resources = sent.map(([r, other]) => ({
                name: r.name ?? other,
                version: `r${n}`,
                resource: r.value,
                aliases: [],
              }));
              xds.sendRaw(k.kind, {
                system_version_info: `v${n}`,
                resources,
                type_url: TYPE_URLS.V3[k.kind],
                nonce: n,
                removed_resources: removed,
              });
              const answer = await xds.waitFor((r) => r.response_nonce === n, 10_000, from);
              const c = expectation(sent.map(([r]) => r));
              const both = resources.some((r) => removed.includes(r.name));
              const what = `delta ${KIND} response ${n}`;
              const verdict = answer.error_detail ? 'refused' : 'accepted';
              check(
                k,
                h,
                before,
                verdict,
                both
                  ? { ...c, expect: 'refuse' }
                  : { ...c, expect: c.expect === 'accept' ? 'either' : c.expect },
                what,
              );
              if (c.expect === 'accept' && !both)
                assert.equal(verdict, 'accepted', `${what} must be accepted`);
              if (verdict === 'refused' || c.expect !== 'accept' || both || k.owns === 'none') return;
              // Accepted: what it sent is held, and (CDS, LDS) what it removed is gone.
              const now = (JSON.parse(h.state(k.kind)) as Array<[string]>).map(([name]) => name);
              for (const r of resources) assert.ok(now.includes(r.name), `${what}: '${r.name}' not applied`);
              if (k.owns === 'exactly')
                for (const name of removed)
                  if (name !== STATIC_NAME[k.kind])
                    assert.ok(!now.includes(name), `${what}: '${name}' not removed`);
            },
          ),
          { numRuns: RUNS, seed: 30 },
        );
        assert.ok(xds.streams > 0, 'the stream is still up');
      } finally {
        await close();
      }
    });

    it('over REST: every body answered by the next poll, state unchanged on a NACK or a failure', async () => {
      const { xds, h, close } = await servedClient('rest', 'start', k.kind);
      try {
        await fc.assert(
          fc.asyncProperty(
            jsonResponse,
            fc.constantFrom(200, 200, 200, 200, 503),
            fc.boolean(),
            async (c, status, cut) => {
              const text = JSON.stringify(c.body) ?? '';
              const body = cut ? text.slice(0, Math.floor(text.length / 2)) : text;
              const at = await xds.sendRawRest(k.kind, body, status);
              // Read as the body leaves: the polls before it may have applied the server's own state.
              const before = h.state(k.kind);
              const failures = stat(h, k, 'update_failure');
              const answer = await xds.waitFor(() => true, 10_000, at);
              if (status !== 200) {
                assert.equal(stat(h, k, 'update_failure'), failures + 1, 'a refused fetch is a failure');
                assert.equal(h.state(k.kind), before);
                return;
              }
              const version = (c.body as { version_info?: unknown } | null)?.version_info;
              const verdict = answer.error_detail ? 'refused' : 'accepted';
              if (!answer.error_detail)
                assert.equal(answer.version_info, typeof version === 'string' ? version : '');
              check(
                k,
                h,
                before,
                verdict,
                cut && text.length > 1 ? { ...c, expect: 'refuse' } : c,
                `REST ${KIND} body ${body.slice(0, 200)}`,
              );
            },
          ),
          { numRuns: RUNS, seed: 25 },
        );
      } finally {
        await close();
      }
    });

    it('from a file: every content counted once as accepted, rejected or failed, state unchanged unless accepted', async () => {
      const dir = mkdtempSync(join(tmpdir(), 'proxy-xds-fuzz-'));
      after(() => rmSync(dir, { recursive: true, force: true }));
      const file = join(dir, `${k.kind}.json`);
      writeFileSync(
        file,
        JSON.stringify({ version_info: 'start', resources: [typed(validResource(k.kind, WATCHED[k.kind]))] }),
      );
      const h = await startXdsClient(xdsBootstrap({ path: file }, k.kind));
      let serial = 0;
      try {
        await h.client.initialized;
        await fc.assert(
          fc.asyncProperty(jsonResponse, fc.boolean(), async (c, cut) => {
            const before = h.state(k.kind);
            const counted = outcomes(h, k);
            const accepted = stat(h, k, 'update_success');
            // A nonce makes every content new, so each is read (an unchanged file is not an update).
            const body =
              typeof c.body === 'object' && c.body !== null && !Array.isArray(c.body)
                ? { ...c.body, nonce: String(serial++) }
                : c.body;
            const text = JSON.stringify(body) ?? '';
            const written = cut ? `${text.slice(0, Math.floor(text.length / 2))}\u0000` : text;
            replaceFile(file, written);
            await until('the content counted', async () => outcomes(h, k) > counted);
            assert.equal(outcomes(h, k), counted + 1, 'counted once');
            const verdict = stat(h, k, 'update_success') > accepted ? 'accepted' : 'refused';
            check(
              k,
              h,
              before,
              verdict,
              cut ? { ...c, expect: 'refuse' } : c,
              `${KIND} file ${written.slice(0, 200)}`,
            );
          }),
          { numRuns: RUNS, seed: 25 },
        );
      } finally {
        await h.close();
      }
    });
  });
}
