/** Filter chain selection: the reference's criteria order, most specific value first, no going back. */
import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import {
  type ConnectionFacts,
  compileMatch,
  needsClientHello,
  selectChain,
} from '../../../src/dataplane/listeners/chain-match.js';
import type { ChainMatch } from '../../../src/config/listener.js';

function m(over: Partial<ChainMatch>): ChainMatch {
  return {
    destinationPort: null,
    prefixRanges: [],
    sourcePrefixRanges: [],
    sourcePorts: [],
    serverNames: [],
    transportProtocol: '',
    applicationProtocols: [],
    ...over,
  };
}

function facts(over: Partial<ConnectionFacts>): ConnectionFacts {
  return {
    localAddress: '127.0.0.1',
    localPort: 443,
    remoteAddress: '10.0.0.9',
    remotePort: 5555,
    transportProtocol: 'tls',
    serverName: '',
    applicationProtocols: [],
    ...over,
  };
}

function pick(chains: Array<Partial<ChainMatch>>, f: Partial<ConnectionFacts>): number {
  return selectChain(
    chains.map((c) => compileMatch(m(c))),
    facts(f),
  );
}

describe('selectChain', () => {
  it('prefers an exact server name, then the longest wildcard, then chains without names', () => {
    const chains = [
      {},
      { serverNames: ['*.test'] },
      { serverNames: ['*.b.test'] },
      { serverNames: ['a.b.test'] },
    ];
    assert.equal(pick(chains, { serverName: 'a.b.test' }), 3);
    assert.equal(pick(chains, { serverName: 'x.b.test' }), 2);
    assert.equal(pick(chains, { serverName: 'x.y.b.test' }), 2);
    assert.equal(pick(chains, { serverName: 'c.test' }), 1);
    assert.equal(pick(chains, { serverName: 'other.example' }), 0);
    assert.equal(pick(chains, { serverName: '' }), 0);
    // `*.b.test` does not hold `b.test` itself.
    assert.equal(pick([{ serverNames: ['*.b.test'] }], { serverName: 'b.test' }), -1);
  });

  it('does not go back to a less specific chain when a later criterion fails', () => {
    const chains = [{ serverNames: ['a.test'], applicationProtocols: ['h2'] }, { serverNames: ['*.test'] }];
    assert.equal(pick(chains, { serverName: 'a.test', applicationProtocols: ['http/1.1'] }), -1);
    assert.equal(pick(chains, { serverName: 'a.test', applicationProtocols: ['http/1.1', 'h2'] }), 0);
  });

  it('applies the criteria in order: destination port before server name', () => {
    const chains = [{ serverNames: ['a.test'] }, { destinationPort: 443 }];
    assert.equal(pick(chains, { serverName: 'a.test' }), 1);
    assert.equal(pick(chains, { serverName: 'a.test', localPort: 8443 }), 0);
  });

  it('tells TLS from plain text, and longest source prefix wins', () => {
    const chains = [
      { transportProtocol: 'tls' },
      { transportProtocol: 'raw_buffer', sourcePrefixRanges: [{ prefix: '10.0.0.0', len: 8 }] },
      { transportProtocol: 'raw_buffer', sourcePrefixRanges: [{ prefix: '10.0.0.0', len: 24 }] },
    ];
    assert.equal(pick(chains, { transportProtocol: 'tls' }), 0);
    assert.equal(pick(chains, { transportProtocol: 'raw_buffer' }), 2);
    assert.equal(pick(chains, { transportProtocol: 'raw_buffer', remoteAddress: '10.9.0.1' }), 1);
    assert.equal(pick(chains, { transportProtocol: 'raw_buffer', remoteAddress: '192.168.0.1' }), -1);
  });

  it('peeks connections only when a chain matches on what the ClientHello says', () => {
    assert.equal(needsClientHello([compileMatch(m({ destinationPort: 1 }))]), false);
    assert.equal(needsClientHello([compileMatch(m({})), compileMatch(m({ serverNames: ['a'] }))]), true);
    assert.equal(needsClientHello([compileMatch(m({ transportProtocol: 'raw_buffer' }))]), true);
  });
});
