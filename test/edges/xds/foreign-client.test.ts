/**
 * The test management server against an xDS client that is not ours: gRPC's own
 * (@grpc/grpc-js-xds, v3 over ADS) resolves `xds:///service` through LDS (an api_listener
 * whose HTTP connection manager carries the route table), CDS and EDS served by
 * test/helpers/xds-server.ts, and one unary call reaches a real gRPC server through it.
 */
import assert from 'node:assert/strict';
import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { after, before, describe, it } from 'node:test';
import * as grpc from '@grpc/grpc-js';
import * as xds from '@grpc/grpc-js-xds';
import * as protoLoader from '@grpc/proto-loader';
import { XdsServer } from '../../helpers/xds-server.js';

const V3 = 'type.googleapis.com/envoy';
const PROTO = `syntax = "proto3";
package echo;
service Echo { rpc Say (Msg) returns (Msg); }
message Msg { string text = 1; }
`;

type Say = (
  req: { text: string },
  options: grpc.CallOptions,
  done: (err: grpc.ServiceError | null, res?: { text: string }) => void,
) => void;
type EchoClient = grpc.Client & { Say: Say };

const HCM = `${V3}.extensions.filters.network.http_connection_manager.v3.HttpConnectionManager`;
const ROUTER = {
  name: 'router',
  typed_config: { '@type': `${V3}.extensions.filters.http.router.v3.Router` },
};
const ADS = { ads: {} };

/** A route table sending every call to `cluster`. */
function routes(cluster: string) {
  return {
    name: 'service-routes',
    virtual_hosts: [
      { name: 'service', domains: ['*'], routes: [{ match: { prefix: '' }, route: { cluster } }] },
    ],
  };
}

/** The listener `xds:///service` names: gRPC's api_listener, its routes inline or by RDS. */
function listener(routeSpecifier: Record<string, unknown>) {
  return {
    name: 'service',
    api_listener: {
      api_listener: { '@type': HCM, stat_prefix: 'service', ...routeSpecifier, http_filters: [ROUTER] },
    },
  };
}

const cluster = (name: string) => ({ name, type: 'EDS', eds_cluster_config: { eds_config: ADS } });

function assignment(name: string, port: number) {
  return {
    cluster_name: name,
    endpoints: [
      {
        locality: { region: 'r', zone: 'z' },
        // gRPC skips a locality without a weight.
        load_balancing_weight: 1,
        lb_endpoints: [
          { endpoint: { address: { socket_address: { address: '127.0.0.1', port_value: port } } } },
        ],
      },
    ],
  };
}

describe('the test management server and @grpc/grpc-js-xds', () => {
  let dir: string;
  const upstreams: grpc.Server[] = [];
  const ports: Record<string, number> = {};
  let management: XdsServer;
  let client: EchoClient;
  let Echo: grpc.ServiceClientConstructor;

  /** A gRPC server answering `<name> <text>`. */
  async function startEcho(name: string): Promise<void> {
    const server = new grpc.Server();
    server.addService(Echo.service, {
      Say: (call: grpc.ServerUnaryCall<{ text: string }, unknown>, done: grpc.sendUnaryData<unknown>) =>
        done(null, { text: `${name} ${call.request.text}` }),
    });
    upstreams.push(server);
    ports[name] = await new Promise<number>((resolve, reject) =>
      server.bindAsync('127.0.0.1:0', grpc.ServerCredentials.createInsecure(), (err, bound) =>
        err ? reject(err) : resolve(bound),
      ),
    );
  }

  function say(text: string): Promise<string> {
    return new Promise((resolve, reject) =>
      client.Say({ text }, { deadline: Date.now() + 10_000 }, (err, res) =>
        err ? reject(err) : resolve(res!.text),
      ),
    );
  }

  before(async () => {
    dir = mkdtempSync(join(tmpdir(), 'foreign-xds-'));
    writeFileSync(join(dir, 'echo.proto'), PROTO);
    const pkg = grpc.loadPackageDefinition(protoLoader.loadSync(join(dir, 'echo.proto'))) as unknown as {
      echo: { Echo: grpc.ServiceClientConstructor };
    };
    Echo = pkg.echo.Echo;
    await startEcho('echo');
    await startEcho('other');
    management = await XdsServer.start();
    management.set('lds', [listener({ route_config: routes('echo') })], '1');
    management.set('cds', [cluster('echo')], '1');
    management.set('eds', [assignment('echo', ports.echo!)], '1');
    // grpc-js-xds reads its bootstrap once, when its first xDS channel is made.
    process.env.GRPC_XDS_BOOTSTRAP_CONFIG = JSON.stringify({
      xds_servers: [
        {
          server_uri: `127.0.0.1:${management.port}`,
          channel_creds: [{ type: 'insecure' }],
          server_features: ['xds_v3'],
        },
      ],
      node: { id: 'foreign-client-test', locality: {} },
    });
    xds.register();
    client = new Echo('xds:///service', grpc.credentials.createInsecure()) as unknown as EchoClient;
  });

  after(async () => {
    client.close();
    await management.stop();
    for (const server of upstreams) server.forceShutdown();
    rmSync(dir, { recursive: true, force: true });
  });

  it('resolves xds:///service through LDS (routes inline), CDS and EDS and makes a unary call', async () => {
    assert.equal(await say('hi'), 'echo hi');
    // Every kind was asked for over v3 ADS and ACKed at the version served.
    for (const kind of ['lds', 'cds', 'eds'] as const) {
      const ack = await management.ack(kind, '1', 5_000);
      assert.match(ack.method, /discovery\.v3\.AggregatedDiscoveryService/);
      assert.match(ack.type_url, /\.v3\./);
    }
  });

  it('follows pushed updates: the listener moves its routes to RDS, which sends calls to a new cluster', async () => {
    management.set('rds', [routes('other')], '2');
    management.set('cds', [cluster('echo'), cluster('other')], '2');
    management.set('eds', [assignment('echo', ports.echo!), assignment('other', ports.other!)], '2');
    management.set(
      'lds',
      [listener({ rds: { route_config_name: 'service-routes', config_source: ADS } })],
      '2',
    );
    for (const kind of ['lds', 'rds', 'cds', 'eds'] as const) await management.ack(kind, '2', 5_000);
    const deadline = Date.now() + 5_000;
    let reply = await say('again');
    while (reply !== 'other again' && Date.now() < deadline) {
      await new Promise((resolve) => setTimeout(resolve, 50));
      reply = await say('again');
    }
    assert.equal(reply, 'other again');
  });
});
