import assert from 'node:assert/strict';
import { it } from 'node:test';
import type { Json } from '../../../events/index.js';
import { redact } from '../../../views/config-dump/redact.js';

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
