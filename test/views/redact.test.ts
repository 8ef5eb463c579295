import assert from 'node:assert/strict';
import { it } from 'node:test';
import type { Json } from '../../events/index.js';
import { redact, redactAt, redactBootstrapText, redactedJson, redactPatch } from '../../views/redact.js';

it('redacts inline secrets at any depth and keeps file names and other fields', () => {
  const config: Json = {
    listeners: [
      {
        tls: {
          private_key: { inline_string: 'KEY' },
          password: { inline_bytes: 'cGFzcw==' },
          session_ticket_keys: { keys: [{ filename: '/k1' }, { inline_string: 'k2' }] },
          certificate_chain: { inline_string: 'PUBLIC' },
        },
      },
    ],
  };
  assert.deepEqual(redact(config), {
    listeners: [
      {
        tls: {
          private_key: { inline_string: '[redacted]' },
          password: { inline_bytes: Buffer.from('[redacted]').toString('base64') },
          session_ticket_keys: { keys: [{ filename: '/k1' }, { inline_string: '[redacted]' }] },
          certificate_chain: { inline_string: 'PUBLIC' },
        },
      },
    ],
  });
});

const KEY = '-----BEGIN PRIVATE KEY-----\nMIIEvQIBADANBgkqhkiG9w0BAQEFAASC\n-----END PRIVATE KEY-----\n';

it('redacts a value found below a secret field, as a patch or a blame answer shows it', () => {
  assert.equal(redactAt(['tls', 'private_key', 'inline_string'], KEY), '[redacted]');
  assert.deepEqual(redactAt(['tls', 'private_key'], { filename: '/etc/key.pem' }), {
    filename: '/etc/key.pem',
  });
  assert.equal(redactAt(['tls', 'certificate_chain', 'inline_string'], 'PUBLIC'), 'PUBLIC');
  assert.deepEqual(
    redactPatch([
      { op: 'replace', path: '/clusters/a/config/private_key/inline_string', value: KEY },
      { op: 'add', path: '/clusters/a/config/tls', value: { password: { inline_string: 'hunter2' } } },
      { op: 'remove', path: '/clusters/b' },
    ]),
    [
      { op: 'replace', path: '/clusters/a/config/private_key/inline_string', value: '[redacted]' },
      { op: 'add', path: '/clusters/a/config/tls', value: { password: { inline_string: '[redacted]' } } },
      { op: 'remove', path: '/clusters/b' },
    ],
  );
});

it('a key named __proto__ stays data, not a prototype', () => {
  const input = JSON.parse('{"__proto__": {"password": "hunter2"}}') as Json;
  const out = redact(input) as Record<string, unknown>;
  assert.ok(Object.hasOwn(out, '__proto__'));
  assert.equal(JSON.stringify(out), '{"__proto__":{"password":"[redacted]"}}');
  assert.equal(redactAt(['__proto__', 'password'], 'hunter2'), '[redacted]');
});

it('redactedJson equals JSON.stringify(redact(x)), including when nothing is secret', () => {
  for (const value of [
    { a: 1, b: ['x'] },
    { options: { config_yaml: '' } },
    { tls: { private_key: { inline_string: KEY } } },
    { text: '"private_key": is only a string here' },
  ]) {
    assert.equal(redactedJson(value), JSON.stringify(redact(value)));
  }
  assert.ok(!redactedJson({ e: { private_key: { inline_string: KEY } } }).includes('BEGIN PRIVATE KEY'));
});

it('a bootstrap given as YAML text keeps its layout and loses its secrets', () => {
  const yaml = [
    '# the edge',
    'static_resources:',
    '  clusters:',
    '    - name: svc',
    '      tls_certificates:',
    '        - certificate_chain: { inline_string: PUBLIC-CHAIN }',
    '          private_key:',
    '            inline_string: |',
    ...KEY.trimEnd()
      .split('\n')
      .map((l) => `              ${l}`),
    '          password: { inline_string: hunter2-hunter2 }',
    '',
  ].join('\n');
  const out = redactBootstrapText(yaml);
  assert.ok(!out.includes('MIIEvQ'), out);
  assert.ok(!out.includes('hunter2'), out);
  assert.ok(out.includes('# the edge') && out.includes('PUBLIC-CHAIN'), out);
  const json = JSON.stringify({ tls: { private_key: { inline_string: KEY } }, name: 'x' });
  assert.ok(!redactBootstrapText(json).includes('MIIEvQ'));
  assert.equal(redactBootstrapText('admin: {}\n'), 'admin: {}\n', 'nothing secret: verbatim');
  assert.equal(redactBootstrapText('a: [unclosed'), '[redacted]', 'unparseable: withheld whole');
  // An alias points a secret field at an anchor elsewhere: the anchor's text would still
  // show the secret, so the whole text is withheld.
  const aliased = 'x-keys: &k "hunter2-hunter2"\ntls: { password: { inline_string: *k } }\n';
  assert.ok(!redactBootstrapText(aliased).includes('hunter2'));
  assert.deepEqual(redact({ config_yaml: yaml }).config_yaml, out);
});
