/**
 * Unknown field numbers in binary xDS resources. Root cause: protobufjs skips a field its type
 * lacks without a word, so a gRPC management server's cluster carrying a field this build does
 * not implement (one of a newer API) was applied as if the field were absent: not counted in
 * `server.dynamic_unknown_fields`, not logged, and ACKed even with
 * `--reject-unknown-dynamic-fields`, where the same field by name in a file or REST response
 * was counted, logged and refused. A binary (`.pb`) bootstrap's were dropped the same way,
 * and `--mode validate` said OK where the reference refuses an unknown static field.
 */
import assert from 'node:assert/strict';
import { mkdtempSync, renameSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { describe, it } from 'node:test';
import protobuf from 'protobufjs';
import { messageType } from '../../src/bootstrap/schema.js';
import { unknownWireFields } from '../../src/bootstrap/wire-unknown.js';
import { TYPE_URLS } from '../../src/edges/xds/types.js';
import { errorsOf, load } from '../helpers/bootstrap.js';
import { startProxyProcess } from '../helpers/proxy-process.js';
import { assignment, edsBootstrap, GRPC_SOURCE, get, until, upstream } from '../helpers/xds-fixtures.js';
import { XdsServer } from '../helpers/xds-server.js';

/** `bytes` with a varint field `id` (one this build has no field for) appended. */
const withField = (bytes: Uint8Array, id: number): Uint8Array =>
  Buffer.concat([
    bytes,
    protobuf.Writer.create()
      .uint32(id << 3)
      .uint64(7)
      .finish(),
  ]);

/** A load assignment for `some_service` on `port` whose first endpoint holds field 999. */
function assignmentWithUnknown(port: number): Uint8Array {
  const cla = messageType('envoy.api.v2.ClusterLoadAssignment');
  const lbEndpoint = messageType('envoy.api.v2.endpoint.LbEndpoint');
  const endpointBytes = withField(
    lbEndpoint
      .encode(
        lbEndpoint.fromObject({
          endpoint: { address: { socket_address: { address: '127.0.0.1', port_value: port } } },
        }),
      )
      .finish(),
    999,
  );
  // endpoints (2) > lb_endpoints (2): the LbEndpoint written by hand around its bytes.
  const locality = protobuf.Writer.create()
    .uint32((2 << 3) | 2)
    .bytes(endpointBytes)
    .finish();
  return Buffer.concat([
    cla.encode(cla.fromObject({ cluster_name: 'some_service' })).finish(),
    protobuf.Writer.create()
      .uint32((2 << 3) | 2)
      .bytes(locality)
      .finish(),
  ]);
}

describe('unknownWireFields', () => {
  it('finds unknown numbers at the top, in sub-messages, list items, Any payloads and map values', () => {
    const cluster = messageType('envoy.api.v2.Cluster');
    const plain = cluster.encode(cluster.fromObject({ name: 'c', connect_timeout: { seconds: 1 } })).finish();
    assert.deepEqual(unknownWireFields(cluster, plain), []);
    const found = (type: protobuf.Type, bytes: Uint8Array) =>
      unknownWireFields(type, bytes).map((u) => `${u.path}|${u.key}|${u.type.fullName}`);
    assert.deepEqual(found(cluster, withField(plain, 900)), ['|#900|.envoy.api.v2.Cluster']);
    const cla = messageType('envoy.api.v2.ClusterLoadAssignment');
    assert.deepEqual(found(cla, assignmentWithUnknown(80)), [
      'endpoints[0].lb_endpoints[0]|#999|.envoy.api.v2.endpoint.LbEndpoint',
    ]);
    // An Any payload: a transport socket's typed_config.
    const any = messageType('google.protobuf.Any');
    const anyBytes = any
      .encode({ type_url: TYPE_URLS.V3.cds, value: withField(plain, 901) } as never)
      .finish();
    const tls = messageType('envoy.api.v2.core.TransportSocket');
    const socket = Buffer.concat([
      tls.encode(tls.fromObject({ name: 'x' })).finish(),
      protobuf.Writer.create()
        .uint32((3 << 3) | 2)
        .bytes(anyBytes)
        .finish(),
    ]);
    assert.deepEqual(found(tls, socket), ['typed_config|#901|.envoy.api.v2.Cluster']);
    // A map value: typed_extension_protocol_options (36), string to Any.
    const entry = protobuf.Writer.create()
      .uint32((1 << 3) | 2)
      .string('k')
      .uint32((2 << 3) | 2)
      .bytes(anyBytes)
      .finish();
    const withMap = Buffer.concat([
      plain,
      protobuf.Writer.create()
        .uint32((36 << 3) | 2)
        .bytes(entry)
        .finish(),
    ]);
    assert.deepEqual(found(cluster, withMap), [
      'typed_extension_protocol_options["k"]|#901|.envoy.api.v2.Cluster',
    ]);
  });
});

describe('a binary (.pb) bootstrap with an unknown field number', () => {
  it('is refused naming it, or with --allow-unknown-static-fields warned and counted', () => {
    const dir = mkdtempSync(join(tmpdir(), 'proxy-pb-unknown-'));
    try {
      const type = messageType('envoy.config.bootstrap.v2.Bootstrap');
      const file = join(dir, 'bootstrap.pb');
      writeFileSync(file, withField(type.encode(type.fromObject({ node: { id: 'n' } })).finish(), 999));
      assert.deepEqual(errorsOf(load({ configPath: file })), [
        `${file}: #999: unknown field '#999' in envoy.config.bootstrap.v2.Bootstrap (check the spelling, or pass --allow-unknown-static-fields to ignore it)`,
      ]);
      const allowed = load({ configPath: file, allowUnknownStaticFields: true });
      assert.ok(allowed.ok);
      assert.equal(allowed.unknownFields, 1);
    } finally {
      rmSync(dir, { recursive: true, force: true });
    }
  });
});

describe('a gRPC EDS push with an unknown field number', () => {
  for (const reject of [false, true])
    it(
      reject ? 'is NACKed naming it with --reject-unknown-dynamic-fields' : 'is applied, counted and logged',
      async () => {
        const a = await upstream('a');
        const b = await upstream('b');
        const xds = await XdsServer.start();
        xds.set('eds', [assignment('some_service', [a.port])], '1');
        const proxy = await startProxyProcess(edsBootstrap(xds.port, GRPC_SOURCE), [
          '--concurrency',
          '2',
          ...(reject ? ['--reject-unknown-dynamic-fields'] : []),
        ]);
        try {
          const port = await proxy.listenerPort('listener_0');
          await xds.ack('eds', '1');
          const from = xds.requests.length;
          for (const conn of (xds as unknown as { conns: Set<{ call: { write(m: object): void } }> }).conns)
            conn.call.write({
              version_info: '2',
              resources: [{ type_url: TYPE_URLS.V2.eds, value: assignmentWithUnknown(b.port) }],
              type_url: TYPE_URLS.V2.eds,
              nonce: 'unknown-field',
            });
          const stat = async () =>
            /server\.dynamic_unknown_fields: (\d+)/.exec(
              (await proxy.get('/stats?filter=dynamic_unknown')).body,
            )?.[1];
          if (reject) {
            const nack = await xds.waitFor((r) => r.response_nonce === 'unknown-field', 15_000, from);
            assert.match(
              nack.error_detail?.message ?? '',
              /endpoints\[0\]\.lb_endpoints\[0\]\.#999: unknown field '#999' in envoy\.api\.v2\.endpoint\.LbEndpoint/,
            );
            assert.equal((await get(port)).body, 'a');
            assert.equal(await stat(), '0');
          } else {
            await until('the push serves', async () => (await get(port)).body === 'b', 15_000);
            assert.equal(await stat(), '1');
            assert.match(proxy.stderr(), /unknown field '#999' in envoy\.api\.v2\.endpoint\.LbEndpoint/);
          }
        } finally {
          await proxy.stop();
          await xds.stop();
          await a.close();
          await b.close();
        }
      },
    );
});

// Root cause: a `path` config source read a `.pb` DiscoveryResponse into JSON, which has lost
// the field numbers its resources' types lack, and judged that: the fields were dropped without
// a word (not counted, not logged, applied with --reject-unknown-dynamic-fields), where the same
// resource over gRPC was counted, logged and refused. Its resources are now judged as the Anys
// they are in the file, through the same wire walk.
describe('a .pb xDS file (path config source) with an unknown field number', () => {
  /** A `.pb` DiscoveryResponse of one load assignment (its bytes as given). */
  const pbResponse = (version: string, cla: Uint8Array): Uint8Array => {
    const type = messageType('envoy.api.v2.DiscoveryResponse');
    return type
      .encode(
        type.fromObject({ version_info: version, resources: [{ type_url: TYPE_URLS.V2.eds, value: cla }] }),
      )
      .finish();
  };
  const plainAssignment = (port: number): Uint8Array => {
    const cla = messageType('envoy.api.v2.ClusterLoadAssignment');
    return cla.encode(cla.fromObject(assignment('some_service', [port]))).finish();
  };
  for (const reject of [false, true])
    it(
      reject
        ? 'is rejected naming it with --reject-unknown-dynamic-fields'
        : 'is applied, counted and logged',
      async () => {
        const dir = mkdtempSync(join(tmpdir(), 'proxy-pb-file-unknown-'));
        const file = join(dir, 'eds.pb');
        const a = await upstream('a');
        const b = await upstream('b');
        writeFileSync(file, pbResponse('1', plainAssignment(a.port)));
        const proxy = await startProxyProcess(edsBootstrap(1, { path: file }), [
          '--concurrency',
          '2',
          ...(reject ? ['--reject-unknown-dynamic-fields'] : []),
        ]);
        try {
          const port = await proxy.listenerPort('listener_0');
          assert.equal((await get(port)).body, 'a');
          writeFileSync(`${file}.next`, pbResponse('2', assignmentWithUnknown(b.port)));
          renameSync(`${file}.next`, file);
          const stats = async (filter: string) => (await proxy.get(`/stats?filter=${filter}`)).body;
          const named =
            /endpoints\[0\]\.lb_endpoints\[0\]\.#999: unknown field '#999' in envoy\.api\.v2\.endpoint\.LbEndpoint/;
          if (reject) {
            await until('the file rejected', async () =>
              /some_service\.update_rejected: 1/.test(await stats('update_rejected')),
            );
            for (let i = 0; i < 3; i++) assert.equal((await get(port)).body, 'a');
            assert.match(proxy.stderr(), named);
          } else {
            await until('the file serves', async () => (await get(port)).body === 'b', 15_000);
            assert.match(await stats('dynamic_unknown'), /server\.dynamic_unknown_fields: 1\b/);
            assert.match(proxy.stderr(), /unknown field '#999' in envoy\.api\.v2\.endpoint\.LbEndpoint/);
          }
        } finally {
          await proxy.stop();
          await a.close();
          await b.close();
          rmSync(dir, { recursive: true, force: true });
        }
      },
    );
});
