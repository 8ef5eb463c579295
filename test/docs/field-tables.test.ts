/**
 * docs/bootstrap.md "What acts, what is refused" lists, message by message, every field a
 * compile step refuses or only warns about, with the text the loader prints. The rows come
 * from the FieldTables themselves, so when a later piece of work makes a field act, the doc
 * must change with it (the failure shows the rows to write).
 */
import assert from 'node:assert/strict';
import { readFileSync } from 'node:fs';
import { join } from 'node:path';
import { describe, it } from 'node:test';
import { FIELD_TABLES as applicationLogTables } from '../../src/bootstrap/application-log.js';
import { FIELD_TABLES as bootstrapExtensionTables } from '../../src/bootstrap/bootstrap-extensions.js';
import type { FieldTable } from '../../src/bootstrap/honoured.js';
import { FIELD_TABLES as bootstrapTables } from '../../src/bootstrap/validate.js';
import { FIELD_TABLES as clusterTables } from '../../src/config/cluster.js';
import { FIELD_TABLES as configSourceTables } from '../../src/config/config-source.js';
import { FIELD_TABLES as healthTables } from '../../src/config/health.js';
import { FIELD_TABLES as lbPolicyTables } from '../../src/config/lb-policy.js';
import { FIELD_TABLES as listenerTables } from '../../src/config/listener.js';
import { FIELD_TABLES as overloadTables } from '../../src/config/overload.js';
import { FIELD_TABLES as statsSinkTables } from '../../src/config/stats-sinks.js';
import { FIELD_TABLES as statsConfigTables } from '../../src/config/histogram-buckets.js';
import { FIELD_TABLES as tlsTables } from '../../src/config/tls-fields.js';
import { FIELD_TABLES as accessLogTables } from '../../src/dataplane/access-log/config.js';
import { FIELD_TABLES as httpFilterTables } from '../../src/dataplane/http/filters.js';
import { FIELD_TABLES as hcmTables } from '../../src/dataplane/http/hcm-config.js';
import { FIELD_TABLES as routeTables } from '../../src/dataplane/router/route-fields.js';
import { FIELD_TABLES as tcpTables } from '../../src/dataplane/tcp/config.js';
import { root } from '../helpers/bootstrap.js';

const HEADING = '## What acts, what is refused';

/** Every compile step's tables, by the message name its findings use. */
const TABLES: Record<string, FieldTable> = {
  ...bootstrapTables,
  ...clusterTables,
  ...lbPolicyTables,
  ...listenerTables,
  ...hcmTables,
  ...routeTables,
  ...httpFilterTables,
  ...tcpTables,
  ...tlsTables,
  ...healthTables,
  ...configSourceTables,
  ...overloadTables,
  ...accessLogTables,
  ...bootstrapExtensionTables,
  ...applicationLogTables,
  ...statsSinkTables,
  ...statsConfigTables,
};

/** `| message | field | rule | text |` as the doc writes it, one per refused or advisory field. */
function expectedRows(): string[] {
  return Object.entries(TABLES).flatMap(([message, table]) =>
    Object.entries(table).flatMap(([field, rule]) => {
      if (rule === 'act') return [];
      const [kind, text] =
        rule === 'advise' ? ['advisory', 'no effect in this build'] : ['refused', rule.refuse];
      return [`| \`${message}\` | \`${field}\` | ${kind} | ${text} |`];
    }),
  );
}

/** The table rows under HEADING, up to the next heading. */
function documentedRows(): string[] {
  const doc = readFileSync(join(root, 'docs/bootstrap.md'), 'utf8').split('\n');
  const start = doc.indexOf(HEADING);
  assert.ok(start >= 0, `docs/bootstrap.md has no '${HEADING}'`);
  const end = doc.findIndex((line, i) => i > start && line.startsWith('## '));
  return doc
    .slice(start + 1, end < 0 ? undefined : end)
    .filter((line) => line.startsWith('| `'))
    .map((line) => line.trim());
}

describe('docs/bootstrap.md', () => {
  it('lists every refused and advisory field of the field tables, with the same text', () => {
    assert.deepEqual(documentedRows(), expectedRows());
  });

  it('the tables cover every compile step named in the doc', () => {
    for (const message of [
      'Bootstrap',
      'Cluster',
      'Listener',
      'HttpConnectionManager',
      'RouteAction',
      'Router',
      'TcpProxy',
    ])
      assert.ok(TABLES[message], message);
  });
});
