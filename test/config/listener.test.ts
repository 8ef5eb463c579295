/** The Listener's compile step, and the compiled listener the listener manager serves. */
import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import type { JsonObject } from '../../events/index.js';
import { Report } from '../../src/bootstrap/report.js';
import { compiledListener, compileListener } from '../../src/config/listener.js';
import { NO_SECRETS, staticSecrets } from '../../src/config/secrets.js';

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
