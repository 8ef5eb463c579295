/** The Listener's compile step, and the compiled listener the listener manager serves. */
import assert from 'node:assert/strict';
import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { describe, it } from 'node:test';
import type { JsonObject } from '../../events/index.js';
import { Report } from '../../src/bootstrap/report.js';
import { compiledListener, compileListener } from '../../src/config/listener.js';
import { NO_SECRETS, staticSecrets } from '../../src/config/secrets.js';
import { runProxy } from '../helpers/cli.js';

/** A load assignment of one endpoint at `address`:80. */
const assignment = (address: string): JsonObject => ({
  endpoints: [{ lb_endpoints: [{ endpoint: { address: { socket_address: { address, port_value: 80 } } } }] }],
});

const TCP = {
  '@type': 'type.googleapis.com/envoy.config.filter.network.tcp_proxy.v2.TcpProxy',
  stat_prefix: 'tcp',
  cluster: 'backend',
};

const listener = (extra: JsonObject = {}): JsonObject => ({
  name: 'front',
  address: { socket_address: { address: '127.0.0.1', port_value: 10000 } },
  filter_chains: [{ filters: [{ name: 'envoy.tcp_proxy', typed_config: TCP }] }],
  ...extra,
});

describe('compileListener', () => {
  it('returns the spec and its findings in the report it is given', () => {
    const report = new Report('bootstrap.yaml');
    const { value, findings } = compileListener(listener(), 'static_resources.listeners[0]', { report });
    assert.equal(findings, report);
    assert.deepEqual(report.errors, []);
    assert.equal(value?.port, 10000);
    assert.equal(
      value?.chains[0]?.filters.terminal.configType,
      'envoy.config.filter.network.tcp_proxy.v2.TcpProxy',
    );
  });

  it('refuses a field by its path, with a null value', () => {
    const { value, findings } = compileListener(
      listener({ udp_listener_config: {} }),
      'static_resources.listeners[1]',
    );
    assert.equal(value, null);
    assert.match(
      findings.errors.join('\n'),
      /static_resources\.listeners\[1\]\.udp_listener_config: UDP listening/,
    );
  });
});

describe('a listener address', () => {
  const at = (address: string) =>
    compileListener(
      listener({ address: { socket_address: { address, port_value: 10000 } } }),
      'static_resources.listeners[0]',
    );

  it('refuses a host name as the reference does (it binds only an IP literal)', () => {
    const { value, findings } = at('localhost');
    assert.equal(value, null);
    assert.match(
      findings.errors.join('\n'),
      /static_resources\.listeners\[0\]\.address\.socket_address\.address: malformed IP address: localhost/,
    );
  });

  it('takes IPv4 and IPv6 literals, wildcards included', () => {
    for (const address of ['0.0.0.0', '::', '::1', '127.0.0.1', '::ffff:127.0.0.1'])
      assert.deepEqual(at(address).findings.errors, [], address);
  });

  it('--mode validate exits 1 naming the path of a listener bound to localhost', async () => {
    const dir = mkdtempSync(join(tmpdir(), 'listener-address-'));
    try {
      const file = join(dir, 'bootstrap.yaml');
      writeFileSync(
        file,
        JSON.stringify({
          static_resources: {
            listeners: [
              listener({ address: { socket_address: { address: 'localhost', port_value: 10000 } } }),
            ],
            clusters: [
              {
                name: 'backend',
                connect_timeout: '1s',
                type: 'STRICT_DNS',
                load_assignment: assignment('localhost'),
              },
            ],
          },
        }),
      );
      const run = await runProxy(['--mode', 'validate', '-c', file], {}, 60000);
      assert.equal(run.code, 1);
      const out = run.stdout + run.stderr;
      assert.match(out, /static_resources\.listeners\[0\]\.address\.socket_address\.address/);
      // A STRICT_DNS cluster looks its names up: its localhost is not refused.
      assert.doesNotMatch(out, /clusters\[0\]/);
    } finally {
      rmSync(dir, { recursive: true, force: true });
    }
  });
});

describe('compiledListener', () => {
  it('compiles once per config and set of secrets', () => {
    const raw = listener();
    const first = compiledListener(raw, NO_SECRETS);
    assert.equal(compiledListener(raw, NO_SECRETS), first, 'a rebind reuses it');
    const other = staticSecrets({ static_resources: { secrets: [] } });
    assert.notEqual(compiledListener(raw, other), first, 'other secrets compile afresh');
    assert.deepEqual(compiledListener(raw, other).value, first.value);
  });

  it('labels its findings with the listener name, as a bind failure reports them', () => {
    const { value, findings } = compiledListener(listener({ filter_chains: [] }), NO_SECRETS);
    assert.equal(value, null);
    assert.match(
      findings.errors.join('\n'),
      /^listener 'front': \.?filter_chains: a listener needs at least one filter chain/,
    );
  });
});
