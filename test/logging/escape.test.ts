import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import { cEscape, escapeLogLine, escapeNewlines, jsonEscape } from '../../src/logging/escape.js';

describe('log escaping', () => {
  it('C-escapes named characters, control bytes and non-ASCII bytes like absl::CEscape', () => {
    assert.equal(cEscape('a\nb\rc\td"e\'f\\g'), 'a\\nb\\rc\\td\\"e\\\'f\\\\g');
    assert.equal(cEscape('\x01\x7f'), '\\001\\177');
    assert.equal(cEscape('é'), '\\303\\251');
    assert.equal(cEscape('plain text 123'), 'plain text 123');
  });

  it('escapes a whole line but keeps its final end of line', () => {
    assert.equal(escapeLogLine('[info] two\nlines\n'), '[info] two\\nlines\n');
    assert.equal(escapeLogLine('no newline'), 'no newline');
  });

  it('escapes newlines only for %_ and JSON for %j', () => {
    assert.equal(escapeNewlines('a\nb\tc'), 'a\\nb\tc');
    assert.equal(jsonEscape('say "hi"\n'), 'say \\"hi\\"\\n');
  });
});
