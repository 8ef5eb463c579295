/**
 * Property test of the xDS client (issue 25, item 5, fuzz suite): random and mutated CDS
 * DiscoveryResponses through each source, a real gRPC management server (ADS, v3), a real
 * REST server and a real file, into one client each. Every response is answered (gRPC and
 * REST: the ACK or NACK of its nonce or poll; file: exactly one of update_success,
 * update_rejected, update_failure), a refused one leaves the discovered clusters exactly as
 * they were, an accepted one leaves exactly its clusters, a response made only of valid,
 * distinct clusters is accepted and one with an invalid cluster refused, and nothing ends
 * the process. Fixed seed; `FUZZ_RUNS` raises the run count (`npm run fuzz`).
 */
import assert from 'node:assert/strict';
import { mkdtempSync, renameSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { after, describe, it } from 'node:test';
import fc from 'fast-check';
import type { JsonObject } from '../../events/index.js';
import { TYPE_URLS, type WireResource } from '../../src/xds/types.js';
import {
  cdsBootstrap,
  cluster,
  servedClient,
  startXdsClient,
  type XdsClientHarness,
} from '../helpers/xds-client.js';
import { until } from '../helpers/xds-fixtures.js';
import { wireResource } from '../helpers/xds-server.js';

const RUNS = Number(process.env.FUZZ_RUNS ?? 25);
const V3 = TYPE_URLS.V3.cds;
/** `xds_cluster` is the bootstrap's static cluster: discovery may not name it. */
const NAMES = ['a', 'b', 'web', 'xds_cluster'];
const BAD: JsonObject[] = [{ connect_timeout: '0s' }, { connect_timeout: '-1s' }, { lb_policy: 'NOPE' }];
/** The invalid clusters that still encode (a negative duration and an unknown enum do not). */
const BAD_ON_THE_WIRE: JsonObject[] = [
  { connect_timeout: '0s' },
  { connect_timeout: '0s', lb_policy: 'RANDOM' },
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
  fc.constantFrom(null, -1, 1.5, 2 ** 53, 1e308, '', 'x'.repeat(2000), [], {}, '__proto__', true, {
    __proto__: null,
  }),
);
const name = fc.constantFrom(...NAMES);
const validity = (n: string): 'valid' | 'invalid' => (n === 'xds_cluster' ? 'invalid' : 'valid');
const typed = (c: JsonObject): JsonObject => ({ '@type': V3, ...c });

/** A resource as JSON (file, REST): valid, invalid, odd, mistyped or with one field replaced. */
const jsonResource: fc.Arbitrary<Res<unknown>> = fc.oneof(
  {
    weight: 4,
    arbitrary: name.map((n): Res<unknown> => ({ value: typed(cluster(n)), name: n, expect: validity(n) })),
  },
  fc.tuple(name, fc.constantFrom(...BAD)).map(([n, bad]) => ({
    value: typed(cluster(n, bad)),
    name: n,
    expect: 'invalid' as const,
  })),
  odd.map((value) => ({ value, name: null, expect: 'unknown' as const })),
  fc.constantFrom(null, 1, 'x', [], true).map((value) => ({ value, name: null, expect: 'invalid' as const })),
  fc
    .tuple(name, fc.constantFrom(TYPE_URLS.V3.lds, 'type.googleapis.com/nope', 5, null, undefined))
    .map(([n, url]) => ({ value: { ...cluster(n), '@type': url }, name: null, expect: 'invalid' as const })),
  fc
    .tuple(
      name,
      fc.oneof(
        fc.constantFrom('name', 'type', 'connect_timeout', 'load_assignment', 'lb_policy'),
        fc.string(),
      ),
      odd,
    )
    .map(([n, key, value]) => ({
      value: { ...typed(cluster(n)), [key]: value },
      name: key === 'name' ? null : n,
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

/** A resource off the wire: valid, invalid, mistyped, random bytes, or a valid one damaged. */
const wireRes: fc.Arbitrary<Res<WireResource>> = fc.oneof(
  {
    weight: 4,
    arbitrary: name.map((n) => ({
      value: wireResource('cds', cluster(n), 'V3'),
      name: n,
      expect: validity(n),
    })),
  },
  fc.tuple(name, fc.constantFrom(...BAD_ON_THE_WIRE)).map(([n, bad]) => ({
    value: wireResource('cds', cluster(n, bad), 'V3'),
    name: n,
    expect: 'invalid' as const,
  })),
  fc
    .tuple(name, fc.constantFrom(TYPE_URLS.V2.cds, TYPE_URLS.V3.lds, 'type.googleapis.com/nope', ''))
    .map(([n, url]) => ({
      value: { ...wireResource('cds', cluster(n), 'V3'), type_url: url },
      name: null,
      expect: 'invalid' as const,
    })),
  fc
    .uint8Array({ maxLength: 64 })
    .map((value) => ({ value: { type_url: V3, value }, name: null, expect: 'unknown' as const })),
  fc.tuple(name, fc.nat(), fc.integer({ min: 0, max: 255 }), fc.boolean()).map(([n, at, byte, cut]) => {
    const value = Uint8Array.from(wireResource('cds', cluster(n), 'V3').value);
    const i = at % value.length;
    const damaged = cut ? value.slice(0, i) : value.map((b, j) => (j === i ? byte : b));
    return { value: { type_url: V3, value: damaged }, name: null, expect: 'unknown' as const };
  }),
);

/** Checks one answer against the case: the state after it, and the expected verdict. */
function check(
  h: XdsClientHarness,
  before: string,
  verdict: 'accepted' | 'refused',
  c: { expect: 'accept' | 'refuse' | 'either'; names: string[] },
  what: string,
): void {
  if (c.expect === 'accept') assert.equal(verdict, 'accepted', `${what} must be accepted`);
  if (c.expect === 'refuse') assert.equal(verdict, 'refused', `${what} must be refused`);
  if (verdict === 'refused') assert.equal(h.clusters(), before, `${what}: refused, yet the clusters changed`);
  else if (c.expect === 'accept') {
    const now = (JSON.parse(h.clusters()) as Array<[string]>).map(([n]) => n).sort();
    assert.deepEqual(now, [...new Set(c.names)].sort(), `${what}: accepted, its clusters are the state`);
  }
}

const stat = (h: XdsClientHarness, name: string) => h.counter(`cluster_manager.cds.${name}`);
const outcomes = (h: XdsClientHarness) =>
  stat(h, 'update_success') + stat(h, 'update_rejected') + stat(h, 'update_failure');

describe('xDS client fuzz: random and mutated CDS responses from each source', () => {
  it('over gRPC (ADS, v3): every response ACKed or NACKed, state unchanged on a NACK', async () => {
    const { xds, h, close } = await servedClient('grpc', 'start');
    try {
      let nonce = 1000;
      await fc.assert(
        fc.asyncProperty(
          fc.string({ maxLength: 8 }),
          fc.array(wireRes, { maxLength: 4 }),
          async (version, resources) => {
            const before = h.clusters();
            const n = String(nonce++);
            const from = xds.requests.length;
            xds.sendRaw('cds', {
              version_info: version,
              resources: resources.map((r) => r.value),
              type_url: V3,
              nonce: n,
            });
            const answer = await xds.waitFor((r) => r.response_nonce === n, 10_000, from);
            check(
              h,
              before,
              answer.error_detail ? 'refused' : 'accepted',
              expectation(resources),
              `gRPC response ${n}`,
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

  it('over REST: every body answered by the next poll, state unchanged on a NACK or a failure', async () => {
    const { xds, h, close } = await servedClient('rest', 'start');
    try {
      await fc.assert(
        fc.asyncProperty(
          jsonResponse,
          fc.constantFrom(200, 200, 200, 200, 503),
          fc.boolean(),
          async (c, status, cut) => {
            const text = JSON.stringify(c.body) ?? '';
            const body = cut ? text.slice(0, Math.floor(text.length / 2)) : text;
            const at = await xds.sendRawRest('cds', body, status);
            // Read as the body leaves: the polls before it may have applied the server's own state.
            const before = h.clusters();
            const failures = stat(h, 'update_failure');
            const answer = await xds.waitFor(() => true, 10_000, at);
            if (status !== 200) {
              assert.equal(stat(h, 'update_failure'), failures + 1, 'a refused fetch is a failure');
              assert.equal(h.clusters(), before);
              return;
            }
            const version = (c.body as { version_info?: unknown } | null)?.version_info;
            const verdict = answer.error_detail ? 'refused' : 'accepted';
            if (!answer.error_detail)
              assert.equal(answer.version_info, typeof version === 'string' ? version : '');
            check(
              h,
              before,
              verdict,
              cut && text.length > 1 ? { ...c, expect: 'refuse' } : c,
              `REST body ${body.slice(0, 200)}`,
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
    const file = join(dir, 'cds.json');
    writeFileSync(file, JSON.stringify({ version_info: 'start', resources: [typed(cluster('web'))] }));
    const h = await startXdsClient(cdsBootstrap({ path: file }));
    let serial = 0;
    try {
      await h.client.initialized;
      await fc.assert(
        fc.asyncProperty(jsonResponse, fc.boolean(), async (c, cut) => {
          const before = h.clusters();
          const counted = outcomes(h);
          const accepted = stat(h, 'update_success');
          // A nonce makes every content new, so each is read (an unchanged file is not an update).
          const body =
            typeof c.body === 'object' && c.body !== null && !Array.isArray(c.body)
              ? { ...c.body, nonce: String(serial++) }
              : c.body;
          const text = JSON.stringify(body) ?? '';
          const written = cut ? `${text.slice(0, Math.floor(text.length / 2))}\u0000` : text;
          writeFileSync(join(dir, 'next.json'), written);
          renameSync(join(dir, 'next.json'), file);
          await until('the content counted', async () => outcomes(h) > counted);
          assert.equal(outcomes(h), counted + 1, 'counted once');
          const verdict = stat(h, 'update_success') > accepted ? 'accepted' : 'refused';
          check(h, before, verdict, cut ? { ...c, expect: 'refuse' } : c, `file ${written.slice(0, 200)}`);
        }),
        { numRuns: RUNS, seed: 25 },
      );
    } finally {
      await h.close();
    }
  });
});
