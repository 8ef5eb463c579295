/**
 * The network ext_authz against authorizers that misbehave (the HTTP filter's hostile cases:
 * garbage in place of a CheckResponse, a lying frame length, no grpc-status, an HTTP 500, a
 * reset stream, a closed connection, an answer past 1 MiB): each is an error that closes the
 * connection without `failure_mode_allow` and lets it through with it. Then a fast-check run of
 * random answer bytes and statuses: every connection is relayed or closed, none hangs, and the
 * process keeps serving. Fixed seed; `FUZZ_RUNS` sets the number of connections.
 */
import assert from 'node:assert/strict';
import { after, before, describe, it } from 'node:test';
import fc from 'fast-check';
import type { JsonObject } from '../../../../events/index.js';
import {
  type Behaviour,
  grpcAnswer,
  grpcFrame,
  MISBEHAVING_AUTHORIZERS,
  randomGrpcAnswer,
  rawH2Server,
} from '../../../helpers/authz-servers.js';
import { cluster, exchange, tcpServer } from '../../../helpers/dataplane.js';
import { type ProxyProcess, startProxyProcess } from '../../../helpers/proxy-process.js';

const RUNS = Number(process.env.FUZZ_RUNS ?? 100);

const ALLOW = grpcAnswer(grpcFrame(Buffer.alloc(0)));

function listener(name: string, failureModeAllow: boolean): JsonObject {
  return {
    name,
    address: { socket_address: { address: '127.0.0.1', port_value: 0 } },
    filter_chains: [
      {
        filters: [
          {
            name: 'envoy.ext_authz',
            typed_config: {
              '@type': 'type.googleapis.com/envoy.config.filter.network.ext_authz.v2.ExtAuthz',
              stat_prefix: name,
              grpc_service: { envoy_grpc: { cluster_name: 'authz' }, timeout: '4s' },
              failure_mode_allow: failureModeAllow,
            },
          },
          {
            name: 'envoy.tcp_proxy',
            typed_config: {
              '@type': 'type.googleapis.com/envoy.config.filter.network.tcp_proxy.v2.TcpProxy',
              stat_prefix: 'echo',
              cluster: 'echo',
            },
          },
        ],
      },
    ],
  };
}

describe('network ext_authz against a hostile authorizer', () => {
  let behaviour: Behaviour = ALLOW;
  let upstream: Awaited<ReturnType<typeof tcpServer>>;
  let authz: Awaited<ReturnType<typeof rawH2Server>>;
  let proxy: ProxyProcess;
  let strict: number;
  let lenient: number;

  before(async () => {
    upstream = await tcpServer((socket) => {
      const chunks: Buffer[] = [];
      socket.on('data', (c: Buffer) => chunks.push(c));
      socket.on('end', () => socket.end(Buffer.concat([Buffer.from('echo:'), ...chunks])));
    });
    authz = await rawH2Server((stream) => behaviour(stream));
    proxy = await startProxyProcess({
      admin: { address: { socket_address: { address: '127.0.0.1', port_value: 0 } } },
      static_resources: {
        clusters: [
          cluster('echo', [upstream.port]),
          cluster('authz', [authz.port], { http2_protocol_options: {} }),
        ],
        listeners: [listener('strict', false), listener('lenient', true)],
      },
    });
    strict = await proxy.listenerPort('strict');
    lenient = await proxy.listenerPort('lenient');
  });

  after(async () => {
    await proxy?.stop();
    await upstream?.close();
    authz?.close();
  });

  const relayed = async (port: number) => (await exchange(port, 'hi')).data.toString();

  for (const [name, misbehave] of Object.entries(MISBEHAVING_AUTHORIZERS)) {
    it(`${name}: closed without failure_mode_allow, relayed with it`, async () => {
      behaviour = misbehave;
      assert.equal(await relayed(strict), '');
      assert.equal(await relayed(lenient), 'echo:hi');
    });
  }

  it('random answers (bytes, framing, grpc-status) never crash it; each connection is relayed or closed', async () => {
    await fc.assert(
      fc.asyncProperty(randomGrpcAnswer, async (answer) => {
        behaviour = answer;
        assert.ok(['', 'echo:hi'].includes(await relayed(strict)));
      }),
      { seed: 29, numRuns: RUNS },
    );
    behaviour = ALLOW;
    assert.equal(await relayed(strict), 'echo:hi');
  });
});
