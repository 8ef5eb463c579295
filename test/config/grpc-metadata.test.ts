/**
 * `initial_metadata` of a management server (src/config/grpc-metadata.ts, read by the compile
 * step of an `ApiConfigSource`): the stream's headers; one gRPC cannot carry is an error
 * naming its entry.
 */
import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import type { JsonObject } from '../../events/config.js';
import { Report } from '../../src/bootstrap/report.js';
import { compileApiConfigSource } from '../../src/config/config-source.js';

function compile(metadata: JsonObject[]) {
  const report = new Report('test');
  const source = compileApiConfigSource(
    {
      api_type: 'DELTA_GRPC',
      grpc_services: [{ envoy_grpc: { cluster_name: 'local_agent' }, initial_metadata: metadata }],
    },
    'dynamic_resources.ads_config',
    report,
  );
  return { source, problems: report.problems.map((p) => `${p.path}: ${p.message}`) };
}

describe('initial_metadata of a gRPC management server', () => {
  it('is each entry as a header, its name lowercased, an empty value kept', () => {
    const { source, problems } = compile([
      { key: 'x-consul-token', value: '' },
      { key: 'Authorization', value: 'Bearer t' },
    ]);
    assert.deepEqual(problems, []);
    assert.ok(source?.api === 'GRPC');
    assert.deepEqual(source.metadata, [
      ['x-consul-token', ''],
      ['authorization', 'Bearer t'],
    ]);
  });

  it('refuses names and values a stream cannot carry, each naming its entry', () => {
    const { problems } = compile([
      { key: 'bad key', value: 'v' },
      { key: 'grpc-timeout', value: '1S' },
      { value: 'no key' },
      { key: 'x-trace-bin', value: 'AAA=' },
      { key: 'x-ok', value: 'line\nbreak' },
      { key: 'x-raw', raw_value: 'AAA=' },
    ]);
    const at = (i: number, field: string) =>
      problems.find((p) =>
        p.startsWith(`dynamic_resources.ads_config.grpc_services[0].initial_metadata[${i}].${field}`),
      );
    assert.match(at(0, 'key') ?? '', /'bad key' is not a metadata name/);
    assert.match(at(1, 'key') ?? '', /'grpc-timeout' is not a metadata name/);
    assert.match(at(2, 'key') ?? '', /is not a metadata name/);
    assert.match(at(3, 'key') ?? '', /binary metadata \('x-trace-bin'\) on xDS streams is not implemented/);
    assert.match(at(4, 'value') ?? '', /printable ASCII/);
    assert.match(at(5, 'raw_value') ?? '', /not implemented/);
  });
});
