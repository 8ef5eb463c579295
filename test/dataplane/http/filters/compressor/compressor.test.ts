/**
 * The compressor filter (and the decompressor beside it in the gzip sandbox): its compile step
 * (names, type URLs, refusals by name), and the reference's gzip, brotli and zstd sandboxes
 * (fixtures/reference-examples-v3/examples/{gzip,brotli,zstd}/envoy.yaml) served against a real
 * upstream on 127.0.0.1, their bodies decoded by curl and by Node's zlib.
 */
import assert from 'node:assert/strict';
import { execFile } from 'node:child_process';
import { createHash } from 'node:crypto';
import { mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import * as http from 'node:http';
import type { AddressInfo } from 'node:net';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { after, before, describe, it } from 'node:test';
import { brotliDecompressSync, gunzipSync, gzipSync, zstdDecompressSync } from 'node:zlib';
import { parse } from 'yaml';
import { bootstrapOf, type Dump, errorsOf, loadYaml, root } from '../../../../helpers/bootstrap.js';
import { freePort } from '../../../../helpers/free-port.js';
import { type ProxyProcess, startProxyProcess } from '../../../../helpers/proxy-process.js';

const SANDBOXES = join(root, 'fixtures/reference-examples-v3/examples');

/** A bootstrap whose one connection manager runs `filter` then the router. */
function withFilter(filter: string, route = ''): string {
  return `static_resources: { listeners: [{ name: l, address: { socket_address: { address: 127.0.0.1, port_value: 0 } }, filter_chains: [{ filters: [{ name: envoy.filters.network.http_connection_manager, typed_config: { '@type': type.googleapis.com/envoy.extensions.filters.network.http_connection_manager.v3.HttpConnectionManager, stat_prefix: s, route_config: { virtual_hosts: [{ name: v, domains: ['*'], routes: [{ match: { prefix: / }, direct_response: { status: 200 } ${route} }] }] }, http_filters: [${filter}, { name: envoy.filters.http.router }] } }] }] }] }`;
}

const V3 = `'@type': type.googleapis.com/envoy.extensions.filters.http.compressor.v3.Compressor`;
const GZIP = `compressor_library: { name: l, typed_config: { '@type': type.googleapis.com/envoy.extensions.compression.gzip.compressor.v3.Gzip } }`;

describe('the compressor compile step', () => {
  it('is found by its name, its proxy. name, its v3 type URL alone and a TypedStruct', () => {
    for (const filter of [
      `{ name: envoy.filters.http.compressor, typed_config: { ${V3}, ${GZIP} } }`,
      `{ name: proxy.filters.http.compressor, typed_config: { ${V3}, ${GZIP} } }`,
      `{ name: anything, typed_config: { ${V3}, ${GZIP} } }`,
      `{ name: x, typed_config: { '@type': type.googleapis.com/udpa.type.v1.TypedStruct, type_url: type.googleapis.com/envoy.extensions.filters.http.compressor.v3.Compressor, value: { ${GZIP} } } }`,
    ]) {
      assert.equal(
        (bootstrapOf(loadYaml(withFilter(filter))) as Dump).static_resources.listeners[0].filter_chains[0]
          .filters[0].typed_config.http_filters[0].typed_config['@type'],
        'type.googleapis.com/envoy.config.filter.http.compressor.v2.Compressor',
        filter,
      );
    }
  });

  it('refuses by name what it does not implement, and bad values', () => {
    const errors = errorsOf(
      loadYaml(
        withFilter(
          `{ name: envoy.filters.http.compressor, typed_config: { ${V3}, response_direction_config: { status_header_enabled: true, uncompressible_response_codes: [99] }, compressor_library: { name: l, typed_config: { '@type': type.googleapis.com/envoy.extensions.compression.zstd.compressor.v3.Zstd, dictionary: { inline_string: x } } } } }, { name: envoy.filters.http.compressor, typed_config: { ${V3}, compressor_library: { name: m, typed_config: { '@type': type.googleapis.com/envoy.extensions.compression.gzip.compressor.v3.Gzip, window_bits: 16 } } } }, { name: envoy.filters.http.compressor, typed_config: { ${V3}, compressor_library: { name: n, typed_config: { '@type': type.googleapis.com/envoy.extensions.compression.gzip.decompressor.v3.Gzip } } } }, { name: envoy.filters.http.compressor, typed_config: { ${V3} } }`,
          `, typed_per_filter_config: { envoy.filters.http.compressor: { '@type': type.googleapis.com/envoy.extensions.filters.http.compressor.v3.CompressorPerRoute, overrides: { ${GZIP} } } }`,
        ),
      ),
    ).join('\n');
    for (const finding of [
      'http_filters[0].typed_config.response_direction_config.status_header_enabled: the compressor status header (status_header_enabled) is not implemented',
      'http_filters[0].typed_config.response_direction_config.uncompressible_response_codes[0]: must be in [200, 600), got 99',
      'http_filters[0].typed_config.compressor_library.typed_config.dictionary: the zstd compressor dictionary is not implemented',
      'http_filters[1].typed_config.compressor_library.typed_config.window_bits: must be an integer in [9, 15], got 16',
      "http_filters[2].typed_config.compressor_library.typed_config: 'envoy.extensions.compression.gzip.decompressor.v3.Gzip' is not a compressor library of this build",
      'http_filters[3].typed_config.compressor_library: required field missing',
      'typed_per_filter_config["envoy.filters.http.compressor"].overrides.compressor_library: a route\'s own compressor_library is not implemented',
    ])
      assert.ok(errors.includes(finding), `${finding}\nin\n${errors}`);
  });
});

/** A JSON document big enough to compress, and the same bytes each time. */
const JSON_BODY = JSON.stringify({
  items: Array.from({ length: 60 }, (_, i) => ({ id: i, name: `item ${i}`, tags: ['a', 'b'] })),
});
const HTML_BODY = `<html><body>${'<p>hello</p>'.repeat(100)}</body></html>`;

/**
 * The sandboxes' `service`: JSON at `/json`, a small JSON at `/small`, JSON with a strong ETag
 * at `/etag`, HTML (not in the sandboxes' content types) at `/html`; `/echo` answers what it was
 * sent (its length, digest and Content-Encoding).
 */
function service(): http.Server {
  return http.createServer((req, res) => {
    const json = (body: string, extra: http.OutgoingHttpHeaders = {}) => {
      res.writeHead(200, { 'content-type': 'application/json', 'content-length': body.length, ...extra });
      res.end(body);
    };
    if (req.url === '/json') json(JSON_BODY);
    else if (req.url === '/small') json('{"small":true}');
    else if (req.url === '/etag') json(JSON_BODY, { etag: '"v1"' });
    else if (req.url === '/no-transform') json(JSON_BODY, { 'cache-control': 'public, no-transform' });
    else if (req.url === '/html') {
      res.writeHead(200, { 'content-type': 'text/html' });
      res.end(HTML_BODY);
    } else if (req.url === '/echo') {
      const chunks: Buffer[] = [];
      req.on('data', (c: Buffer) => chunks.push(c));
      req.on('end', () => {
        const body = Buffer.concat(chunks);
        res.writeHead(200, { 'content-type': 'text/plain' });
        res.end(
          `${body.length} ${createHash('sha256').update(body).digest('hex')} ${req.headers['content-encoding'] ?? '-'}`,
        );
      });
    } else {
      res.writeHead(404);
      res.end();
    }
  });
}

/** Runs curl with `args` (bounded), its stdout as bytes. */
function curl(args: string[]): Promise<Buffer> {
  return new Promise((resolve, reject) => {
    execFile(
      'curl',
      ['-sS', '--max-time', '20', ...args],
      { encoding: 'buffer', timeout: 30_000 },
      (err, out, errOut) =>
        err ? reject(new Error(`curl ${args.join(' ')}: ${err.message} ${errOut}`)) : resolve(out),
    );
  });
}

interface Raw {
  status: number;
  headers: http.IncomingHttpHeaders;
  body: Buffer;
}

/** GET `path` with `headers`, the body as it came (nothing decoded). */
function get(port: number, path: string, headers: Record<string, string> = {}): Promise<Raw> {
  return new Promise((resolve, reject) => {
    const req = http.get({ host: '127.0.0.1', port, path, headers, agent: false }, (res) => {
      const chunks: Buffer[] = [];
      res.on('data', (c: Buffer) => chunks.push(c));
      res.on('end', () =>
        resolve({ status: res.statusCode ?? 0, headers: res.headers, body: Buffer.concat(chunks) }),
      );
    });
    req.setTimeout(20_000, () => req.destroy(new Error(`GET ${path} timed out`)));
    req.on('error', reject);
  });
}

/**
 * A sandbox as pasted but for where things are: its listeners on free ports, `service` on the
 * local upstream, `envoy-stats` (its admin, behind the second listener) on the admin's port.
 */
async function serve(
  sandbox: string,
  upstream: http.Server,
  concurrency: string,
): Promise<{ proxy: ProxyProcess; port: number; statsPort: number }> {
  const bootstrap = parse(readFileSync(join(SANDBOXES, sandbox, 'envoy.yaml'), 'utf8')) as Dump;
  const listeners: Dump[] = bootstrap.static_resources.listeners;
  listeners.forEach((l, i) => {
    l.name = `listener_${i}`;
    l.address.socket_address = { address: '127.0.0.1', port_value: 0 };
  });
  const adminPort = await freePort();
  const endpoint = (name: string) =>
    bootstrap.static_resources.clusters.find((c: Dump) => c.name === name).load_assignment.endpoints[0]
      .lb_endpoints[0].endpoint.address;
  endpoint('service').socket_address = {
    address: '127.0.0.1',
    port_value: (upstream.address() as AddressInfo).port,
  };
  endpoint('envoy-stats').socket_address = { address: '127.0.0.1', port_value: adminPort };
  bootstrap.admin = { address: { socket_address: { address: '127.0.0.1', port_value: adminPort } } };
  const proxy = await startProxyProcess(bootstrap, ['--concurrency', concurrency]);
  return {
    proxy,
    port: await proxy.listenerPort('listener_0'),
    statsPort: await proxy.listenerPort('listener_1'),
  };
}

describe("the reference's compression sandboxes, served", () => {
  let upstream: http.Server;
  let dir: string;

  before(async () => {
    upstream = service();
    await new Promise<void>((resolve) => upstream.listen(0, '127.0.0.1', resolve));
    dir = mkdtempSync(join(tmpdir(), 'compressor-'));
  });
  after(() => {
    upstream.close();
    rmSync(dir, { recursive: true, force: true });
  });

  it('gzip: compresses JSON for the client that accepts it, curl decodes it; the rest goes as it came', async () => {
    const { proxy, port, statsPort } = await serve('gzip', upstream, '1');
    try {
      const url = `http://127.0.0.1:${port}`;
      assert.equal((await curl(['--compressed', `${url}/json`])).toString(), JSON_BODY);

      const gz = await get(port, '/json', { 'accept-encoding': 'br;q=0.9, gzip;q=0.5' });
      assert.equal(gz.status, 200);
      assert.equal(gz.headers['content-encoding'], 'gzip');
      assert.equal(gz.headers.vary, 'Accept-Encoding');
      assert.equal(gz.headers['content-length'], undefined);
      assert.equal(gz.headers['transfer-encoding'], 'chunked');
      assert.ok(gz.body.length < JSON_BODY.length, `${gz.body.length} bytes`);
      assert.equal(gunzipSync(gz.body).toString(), JSON_BODY);

      // Refused by the client, or not asked for: sent as it came, the Vary still said.
      for (const headers of [{ 'accept-encoding': 'gzip;q=0, identity' }, {}] as Record<string, string>[]) {
        const plain = await get(port, '/json', headers);
        assert.equal(plain.headers['content-encoding'], undefined);
        assert.equal(plain.headers.vary, 'Accept-Encoding');
        assert.equal(plain.headers['content-length'], String(JSON_BODY.length));
        assert.equal(plain.body.toString(), JSON_BODY);
      }
      // Below the sandbox's min_content_length (100), a strong ETag (disable_on_etag_header),
      // no-transform, and a content type the sandbox does not list (no Vary then).
      for (const path of ['/small', '/etag', '/no-transform', '/html']) {
        const plain = await get(port, path, { 'accept-encoding': 'gzip' });
        assert.equal(plain.headers['content-encoding'], undefined, path);
        assert.equal(plain.headers.vary, undefined, path);
      }
      assert.equal((await get(port, '/etag', { 'accept-encoding': 'gzip' })).headers.etag, '"v1"');

      // The sandbox's decompressor: a gzip upload reaches the service decompressed.
      const upload = Buffer.from('upload '.repeat(500));
      const file = join(dir, 'upload.gz');
      writeFileSync(file, gzipSync(upload));
      const echo = (
        await curl([
          '-H',
          'content-encoding: gzip',
          '-H',
          'content-type: text/plain',
          '--data-binary',
          `@${file}`,
          `${url}/echo`,
        ])
      ).toString();
      assert.equal(echo, `${upload.length} ${createHash('sha256').update(upload).digest('hex')} -`);

      // Its second listener compresses the proxy's own Prometheus page, through the cluster.
      const metrics = (
        await curl(['--compressed', `http://127.0.0.1:${statsPort}/stats/prometheus`])
      ).toString();
      assert.match(metrics, /^# TYPE /m);

      const stats = (await proxy.get('/stats?filter=compress')).body;
      for (const line of [
        'http.ingress_http.compressor.text_optimized.gzip.response.compressed: 3',
        // Counted whether or not the response was compressible: /json twice, /etag twice,
        // /no-transform and the Prometheus page.
        'http.ingress_http.compressor.text_optimized.gzip.header_compressor_used: 6',
        // gzip;q=0, and HTML (no compressor of the chain takes it).
        'http.ingress_http.compressor.text_optimized.gzip.header_not_valid: 2',
        // The request without Accept-Encoding, and the upload (its answer is chunked: no length
        // to find it small by).
        'http.ingress_http.compressor.text_optimized.gzip.no_accept_header: 2',
        'http.ingress_http.compressor.text_optimized.gzip.not_compressed_etag: 2',
        'http.ingress_http.compressor.text_optimized.gzip.response.content_length_too_small: 1',
        'http.ingress_http.decompressor.upload.gzip.request.decompressed: 1',
        `http.ingress_http.decompressor.upload.gzip.request.total_uncompressed_bytes: ${upload.length}`,
      ])
        assert.ok(stats.split('\n').includes(line), `${line}\nin\n${stats}`);
    } finally {
      await proxy.stop();
    }
  });

  for (const [sandbox, encoding, decode, concurrency] of [
    ['brotli', 'br', brotliDecompressSync, '2'],
    ['zstd', 'zstd', zstdDecompressSync, '1'],
  ] as const) {
    it(`${sandbox}: over its TLS listener, curl decodes ${encoding} on HTTP/1.1 and HTTP/2 (--concurrency ${concurrency})`, async () => {
      const { proxy, port } = await serve(sandbox, upstream, concurrency);
      try {
        const url = `https://127.0.0.1:${port}/json`;
        for (const version of ['--http1.1', '--http2'])
          assert.equal((await curl(['-k', version, '--compressed', url])).toString(), JSON_BODY, version);
        const raw = await curl([
          '-k',
          '--http2',
          '-H',
          `accept-encoding: ${encoding}`,
          '-D',
          join(dir, `${sandbox}.head`),
          url,
        ]);
        assert.match(
          readFileSync(join(dir, `${sandbox}.head`), 'utf8'),
          new RegExp(`^content-encoding: ${encoding}\\r$`, 'm'),
        );
        assert.equal(decode(raw).toString(), JSON_BODY);
        const stats = (await proxy.get(`/stats?filter=compressor`)).body;
        assert.ok(
          stats.includes(`http.ingress_http.compressor.text_optimized.${sandbox}.response.compressed: 3`),
          stats,
        );
      } finally {
        await proxy.stop();
      }
    });
  }
});

describe("the proxy's own replies, compressed as the reference's are", () => {
  // The compressor filter of the reference's docs (its default content types and minimum length)
  // before a route answering itself and one to a cluster nothing listens on.
  const TEXT = `direct ${'response '.repeat(40)}`;
  async function serve(): Promise<{ proxy: ProxyProcess; port: number }> {
    const deadPort = await freePort();
    const bootstrap = parse(
      withFilter(`{ name: envoy.filters.http.compressor, typed_config: { ${V3}, ${GZIP} } }`),
    ) as Dump;
    const hcm = bootstrap.static_resources.listeners[0].filter_chains[0].filters[0].typed_config;
    hcm.route_config.virtual_hosts[0].routes = [
      { match: { prefix: '/direct' }, direct_response: { status: 200, body: { inline_string: TEXT } } },
      { match: { prefix: '/dead' }, route: { cluster: 'dead' } },
    ];
    bootstrap.static_resources.clusters = [
      {
        name: 'dead',
        connect_timeout: '1s',
        type: 'STATIC',
        load_assignment: {
          cluster_name: 'dead',
          endpoints: [
            {
              lb_endpoints: [
                { endpoint: { address: { socket_address: { address: '127.0.0.1', port_value: deadPort } } } },
              ],
            },
          ],
        },
      },
    ];
    bootstrap.admin = { address: { socket_address: { address: '127.0.0.1', port_value: 0 } } };
    const proxy = await startProxyProcess(bootstrap, ['--concurrency', '2']);
    return { proxy, port: await proxy.listenerPort('l') };
  }

  it('gzips a direct response and a 503 for the client that accepts it, with their length; the rest go as they are', async () => {
    const { proxy, port } = await serve();
    try {
      const direct = await get(port, '/direct', { 'accept-encoding': 'gzip' });
      assert.equal(direct.status, 200);
      assert.equal(direct.headers['content-encoding'], 'gzip');
      assert.equal(direct.headers['content-type'], 'text/plain');
      assert.equal(direct.headers.vary, 'Accept-Encoding');
      assert.equal(direct.headers['content-length'], String(direct.body.length));
      assert.ok(direct.body.length < TEXT.length, `${direct.body.length} bytes`);
      assert.equal(gunzipSync(direct.body).toString(), TEXT);

      const failed = await get(port, '/dead', { 'accept-encoding': 'gzip' });
      assert.equal(failed.status, 503);
      assert.equal(failed.headers['content-encoding'], 'gzip');
      assert.equal(
        gunzipSync(failed.body).toString(),
        'upstream connect error or disconnect/reset before headers. reset reason: connection failure',
      );

      const plain = await get(port, '/direct');
      assert.equal(plain.headers['content-encoding'], undefined);
      assert.equal(plain.body.toString(), TEXT);
      assert.equal(plain.headers['content-length'], String(TEXT.length));

      const stats = (await proxy.get('/stats?filter=compressor')).body;
      assert.ok(stats.includes('http.s.compressor.l.gzip.compressed: 2'), stats);
      assert.ok(stats.includes('http.s.compressor.l.gzip.no_accept_header: 1'), stats);
    } finally {
      await proxy.stop();
    }
  });
});
