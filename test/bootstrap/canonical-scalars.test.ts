/**
 * Root cause: a finding about a value of the wrong shape quoted the value, wherever it sat. A
 * private key written as a bare string (`private_key: "-----BEGIN..."`, a common slip for
 * `private_key: { inline_string: ... }`), as `inline_bytes` that is not base64, or a password
 * given as a number, was printed whole by `--mode validate`, and from a file or REST xDS
 * source went into the log, `/events` and the event-log file (redaction works on fields by
 * name, not on error text). Now a finding under a secret field gives the value's type only.
 */
import assert from 'node:assert/strict';
import { mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { after, describe, it } from 'node:test';
import type { JsonObject } from '../../events/index.js';
import { errorsOf, load } from '../helpers/bootstrap.js';
import { startProxyProcess } from '../helpers/proxy-process.js';
import { discoveryResponse, replaceFile } from '../helpers/replace-file.js';
import { until } from '../helpers/xds-fixtures.js';

const SECRET = 'MIIEvQIBADANBgkqhkiG9w0BAQEFAASC-not-shown';

const certificate = (fields: JsonObject): JsonObject => ({
  certificate_chain: { inline_string: 'PUBLIC-CHAIN' },
  ...fields,
});

/** A cluster whose upstream TLS context holds `tls`, in the v2 form. */
const cluster = (name: string, tls: JsonObject): JsonObject => ({
  name,
  connect_timeout: '1s',
  type: 'STATIC',
  load_assignment: {
    cluster_name: name,
    endpoints: [
      {
        lb_endpoints: [
          { endpoint: { address: { socket_address: { address: '127.0.0.1', port_value: 1 } } } },
        ],
      },
    ],
  },
  tls_context: { common_tls_context: { tls_certificates: [certificate(tls)] } },
});

const dir = mkdtempSync(join(tmpdir(), 'proxy-secret-findings-'));
after(() => rmSync(dir, { recursive: true, force: true }));

describe('a secret of the wrong shape', () => {
  for (const [what, tls, path] of [
    ['a bare string as private_key', { private_key: SECRET }, 'private_key'],
    [
      'inline_bytes that is not base64',
      { private_key: { inline_bytes: `${SECRET}!` } },
      'private_key.inline_bytes',
    ],
    ['a password as a list', { password: [SECRET] }, 'password'],
    [
      'password bytes that are not base64',
      { password: { inline_bytes: `${SECRET}!` } },
      'password.inline_bytes',
    ],
  ] as const)
    it(`${what}: the finding names the field and its type, never the value`, () => {
      const file = join(dir, 'bootstrap.json');
      writeFileSync(
        file,
        JSON.stringify({ static_resources: { clusters: [cluster('c', tls as JsonObject)] } }),
      );
      const text = errorsOf(load({ configPath: file })).join('\n');
      assert.match(text, new RegExp(`tls_certificates\\[0\\]\\.${path.replace('.', '\\.')}: expected`));
      assert.ok(!text.includes(SECRET.slice(0, 20)), text);
    });

  it('elsewhere the value is still quoted', () => {
    const file = join(dir, 'bootstrap.json');
    writeFileSync(
      file,
      JSON.stringify({
        static_resources: {
          clusters: [{ ...cluster('c', { private_key: { filename: '/k.pem' } }), connect_timeout: 'soon' }],
        },
      }),
    );
    const text = errorsOf(load({ configPath: file })).join('\n');
    assert.match(text, /connect_timeout: expected a duration like '0.25s' or '5s', got string "soon"/);
  });
});

describe('a discovered cluster with a secret of the wrong shape, from a file', () => {
  it('is rejected; the log, /events and the event-log file show no key', async () => {
    const file = join(dir, 'cds.json');
    const log = join(dir, 'events.ndjson');
    const write = (clusters: JsonObject[], version: string) => {
      const resources = clusters.map((c) => ({ '@type': 'type.googleapis.com/envoy.api.v2.Cluster', ...c }));
      replaceFile(file, discoveryResponse(version, resources));
    };
    write([], '1');
    const proxy = await startProxyProcess(
      {
        admin: { address: { socket_address: { address: '127.0.0.1', port_value: 0 } } },
        dynamic_resources: { cds_config: { path: file } },
      },
      ['--concurrency', '1', '--event-log', log],
    );
    try {
      write([cluster('web', { private_key: SECRET })], '2');
      await until('the cluster rejected', async () =>
        /cds\.update_rejected: 1/.test((await proxy.get('/stats?filter=cds.update_rejected')).body),
      );
      const events = (await proxy.get('/events?format=json')).body;
      assert.match(
        events,
        /private_key: expected an object \(envoy\.api\.v2\.core\.DataSource\), got a string \(a secret: not shown\)/,
      );
      await until('the event log written', async () => readFileSync(log, 'utf8').includes('not shown'));
      for (const [what, text] of [
        ['/events', events],
        ['the event-log file', readFileSync(log, 'utf8')],
        ['the log', proxy.stderr()],
      ] as const)
        assert.ok(!text.includes(SECRET.slice(0, 20)), `${what} shows the key`);
    } finally {
      await proxy.stop();
    }
  });
});

describe('a number that is no number', () => {
  // Root cause: findings quoted numbers with JSON.stringify, which writes NaN and Infinity as null.
  it("names YAML's .nan and .inf as such, not as null", () => {
    const file = join(dir, 'numbers.yaml');
    writeFileSync(
      file,
      'static_resources:\n  clusters:\n  - name: c\n    connect_timeout: 1s\n    per_connection_buffer_limit_bytes: .nan\n    max_requests_per_connection: -.inf\n',
    );
    const text = errorsOf(load({ configPath: file })).join('\n');
    assert.match(text, /per_connection_buffer_limit_bytes: expected an integer \(uint32\), got number NaN/);
    assert.match(text, /max_requests_per_connection: expected an integer \(uint32\), got number -Infinity/);
  });
});
