/**
 * The decompressor filter: its compile step (names, type URLs, refusals by name), and a chain of
 * a gzip and a zstd decompressor served against a real upstream on 127.0.0.1 with two
 * data-plane threads: compressed responses reach the client decompressed, compressed uploads
 * reach the upstream decompressed, `no-transform` is respected, and a corrupt body is counted
 * and cut, the proxy going on.
 */
import assert from 'node:assert/strict';
import { createHash } from 'node:crypto';
import * as http from 'node:http';
import type { AddressInfo } from 'node:net';
import { after, before, describe, it } from 'node:test';
import { gzipSync, zstdCompressSync } from 'node:zlib';
import { parse } from 'yaml';
import { withAcceptedEncoding } from '../../../../../src/dataplane/http/filters/decompressor/filter.js';
import { bootstrapOf, type Dump, errorsOf, loadYaml } from '../../../../helpers/bootstrap.js';
import { type ProxyProcess, startProxyProcess } from '../../../../helpers/proxy-process.js';

const V3 = `'@type': type.googleapis.com/envoy.extensions.filters.http.decompressor.v3.Decompressor`;
const library = (kind: string, name = kind, fields = '') =>
  `decompressor_library: { name: ${name}, typed_config: { '@type': type.googleapis.com/envoy.extensions.compression.${kind}.decompressor.v3.${kind === 'gzip' ? 'Gzip' : kind === 'zstd' ? 'Zstd' : 'Brotli'} ${fields} } }`;

/** A listener on 127.0.0.1 whose one connection manager runs `filters` then the router to `cluster`. */
function bootstrap(filters: string, port = 0): string {
  return `
static_resources:
  listeners:
  - name: front
    address: { socket_address: { address: 127.0.0.1, port_value: 0 } }
    filter_chains:
    - filters:
      - name: envoy.filters.network.http_connection_manager
        typed_config:
          '@type': type.googleapis.com/envoy.extensions.filters.network.http_connection_manager.v3.HttpConnectionManager
          stat_prefix: front
          route_config: { virtual_hosts: [{ name: v, domains: ['*'], routes: [{ match: { prefix: / }, route: { cluster: service } }] }] }
          http_filters: [${filters}, { name: envoy.filters.http.router, typed_config: { '@type': type.googleapis.com/envoy.extensions.filters.http.router.v3.Router } }]
  clusters:
  - name: service
    type: STATIC
    load_assignment: { cluster_name: service, endpoints: [{ lb_endpoints: [{ endpoint: { address: { socket_address: { address: 127.0.0.1, port_value: ${port} } } } }] }] }
admin: { address: { socket_address: { address: 127.0.0.1, port_value: 0 } } }
`;
}

describe('the decompressor compile step', () => {
  it('is found by its name, its proxy. name, its v3 type URL alone and a TypedStruct', () => {
    for (const filter of [
      `{ name: envoy.filters.http.decompressor, typed_config: { ${V3}, ${library('gzip')} } }`,
      `{ name: proxy.filters.http.decompressor, typed_config: { ${V3}, ${library('brotli')} } }`,
      `{ name: anything, typed_config: { ${V3}, ${library('zstd')} } }`,
      `{ name: x, typed_config: { '@type': type.googleapis.com/xds.type.v3.TypedStruct, type_url: type.googleapis.com/envoy.extensions.filters.http.decompressor.v3.Decompressor, value: { ${library('gzip')} } } }`,
    ])
      assert.equal(
        (bootstrapOf(loadYaml(bootstrap(filter))) as Dump).static_resources.listeners[0].filter_chains[0]
          .filters[0].typed_config.http_filters[0].typed_config['@type'],
        'type.googleapis.com/envoy.config.filter.http.decompressor.v2.Decompressor',
        filter,
      );
  });

  it('refuses by name what it does not implement, and bad values', () => {
    const errors = errorsOf(
      loadYaml(
        bootstrap(
          `{ name: a, typed_config: { ${V3}, ${library('zstd', 'z', ', dictionaries: [{ inline_string: x }]')} } }, { name: b, typed_config: { ${V3}, ${library('gzip', 'g', ', max_inflate_ratio: 0')} } }, { name: c, typed_config: { ${V3}, decompressor_library: { name: c, typed_config: { '@type': type.googleapis.com/envoy.extensions.compression.gzip.compressor.v3.Gzip } } } }, { name: d, typed_config: { ${V3}, ${library('gzip')}, response_direction_config: { common_config: { enabled: { runtime_key: k } } } } }`,
        ),
      ),
    ).join('\n');
    for (const finding of [
      'http_filters[0].typed_config.decompressor_library.typed_config.dictionaries: the zstd decompressor dictionaries is not implemented',
      'http_filters[1].typed_config.decompressor_library.typed_config.max_inflate_ratio: must be an integer in [1, 10000], got 0',
      "http_filters[2].typed_config.decompressor_library.typed_config: 'envoy.extensions.compression.gzip.compressor.v3.Gzip' is not a decompressor library of this build",
      'http_filters[3].typed_config.response_direction_config.common_config.enabled.default_value: required field missing',
    ])
      assert.ok(errors.includes(finding), `${finding}\nin\n${errors}`);
  });

  it('advertises its encoding once, at full weight, after the codings the client gave', () => {
    assert.equal(withAcceptedEncoding(undefined, 'gzip'), 'gzip');
    assert.equal(withAcceptedEncoding('br;q=0.5', 'gzip'), 'br;q=0.5,gzip');
    assert.equal(withAcceptedEncoding('gzip;q=0.2, br', 'gzip'), 'br,gzip');
    assert.equal(withAcceptedEncoding(' , GZIP ', 'gzip'), 'gzip');
  });
});

const TEXT = Buffer.from(JSON.stringify({ words: Array.from({ length: 300 }, (_, i) => `word-${i}`) }));

describe('a gzip and a zstd decompressor, served with two data-plane threads', () => {
  let upstream: http.Server;
  let proxy: ProxyProcess;
  let port: number;
  const seen: http.IncomingHttpHeaders[] = [];

  before(async () => {
    upstream = http.createServer((req, res) => {
      seen.push(req.headers);
      const chunks: Buffer[] = [];
      req.on('data', (c: Buffer) => chunks.push(c));
      req.on('end', () => {
        const body = Buffer.concat(chunks);
        const send = (encoding: string, bytes: Buffer, extra: http.OutgoingHttpHeaders = {}) => {
          res.writeHead(200, { 'content-encoding': encoding, 'content-length': bytes.length, ...extra });
          res.end(bytes);
        };
        if (req.url === '/gzip') send('gzip', gzipSync(TEXT));
        else if (req.url === '/zstd') send('zstd', zstdCompressSync(TEXT));
        else if (req.url === '/two') send('gzip, br', gzipSync(TEXT));
        else if (req.url === '/no-transform')
          send('gzip', gzipSync(TEXT), { 'cache-control': 'no-transform' });
        else if (req.url === '/corrupt') send('gzip', Buffer.from('\x1f\x8b\x08 not really gzip at all'));
        else {
          res.writeHead(200);
          res.end(
            `${body.length} ${createHash('sha256').update(body).digest('hex')} ${req.headers['content-encoding'] ?? '-'}`,
          );
        }
      });
    });
    await new Promise<void>((resolve) => upstream.listen(0, '127.0.0.1', resolve));
    const yaml = bootstrap(
      `{ name: envoy.filters.http.decompressor, typed_config: { ${V3}, ${library('gzip', 'g', ', max_inflate_ratio: 1000')} } }, { name: envoy.filters.http.decompressor, typed_config: { ${V3}, ${library('zstd', 'z')}, request_direction_config: { advertise_accept_encoding: false } } }`,
      (upstream.address() as AddressInfo).port,
    );
    proxy = await startProxyProcess(parse(yaml) as Dump, ['--concurrency', '2']);
    port = await proxy.listenerPort('front');
  });
  after(async () => {
    await proxy?.stop();
    upstream.close();
  });

  function request(
    method: string,
    path: string,
    headers: Record<string, string> = {},
    body?: Buffer,
  ): Promise<{ headers: http.IncomingHttpHeaders; body: Buffer }> {
    return new Promise((resolve, reject) => {
      const req = http.request({ host: '127.0.0.1', port, method, path, headers, agent: false }, (res) => {
        const chunks: Buffer[] = [];
        res.on('data', (c: Buffer) => chunks.push(c));
        res.on('end', () => resolve({ headers: res.headers, body: Buffer.concat(chunks) }));
      });
      req.setTimeout(20_000, () => req.destroy(new Error(`${method} ${path} timed out`)));
      req.on('error', reject);
      req.end(body);
    });
  }

  it('hands the client each response decompressed, its coding dropped, and says gzip to the upstream', async () => {
    for (const path of ['/gzip', '/zstd']) {
      const res = await request('GET', path, { 'accept-encoding': 'br;q=0.5' });
      assert.ok(res.body.equals(TEXT), path);
      assert.equal(res.headers['content-encoding'], undefined, path);
      assert.equal(res.headers['content-length'], undefined, path);
    }
    // Only the gzip decompressor advertises (the zstd one is told not to).
    assert.equal(seen.at(-1)?.['accept-encoding'], 'br;q=0.5,gzip');
    const two = await request('GET', '/two');
    assert.equal(two.headers['content-encoding'], 'br');
    assert.ok(two.body.equals(TEXT));
    const kept = await request('GET', '/no-transform');
    assert.equal(kept.headers['content-encoding'], 'gzip');
    assert.ok(kept.body.equals(gzipSync(TEXT)));
  });

  it('hands the upstream a compressed upload decompressed', async () => {
    for (const [encoding, wire] of [
      ['gzip', gzipSync(TEXT)],
      ['zstd', zstdCompressSync(TEXT)],
    ] as const) {
      const res = await request('POST', '/echo', { 'content-encoding': encoding }, wire);
      assert.equal(
        res.body.toString(),
        `${TEXT.length} ${createHash('sha256').update(TEXT).digest('hex')} -`,
        encoding,
      );
    }
  });

  it('counts a corrupt body and cuts it; the next request is served', async () => {
    const corrupt = await request('GET', '/corrupt');
    assert.equal(corrupt.headers['content-encoding'], undefined);
    assert.equal(corrupt.body.length, 0);
    assert.ok((await request('GET', '/gzip')).body.equals(TEXT));
    const stats = (await proxy.get('/stats?filter=decompressor')).body.split('\n');
    for (const line of [
      'http.front.decompressor.g.gzip.decompressor_library.zlib_data_error: 1',
      // /gzip twice, /two, /corrupt (not /no-transform).
      'http.front.decompressor.g.gzip.response.decompressed: 4',
      'http.front.decompressor.g.gzip.request.decompressed: 1',
      'http.front.decompressor.z.zstd.request.decompressed: 1',
      'http.front.decompressor.z.zstd.response.decompressed: 1',
    ])
      assert.ok(stats.includes(line), `${line}\nin\n${stats.join('\n')}`);
  });
});
