/**
 * The filter runner's iteration, both directions, against recording chain ends: headers, body
 * pieces and trailers reach the end in order whatever the filters hold, a filter holding the
 * headers sees the data behind them, buffers over the limit answer 413 / 500, holds over the
 * limit pause the sender. Over real sockets: runner-e2e.test.ts.
 */
import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import { newStreamInfo } from '../../../../src/dataplane/access-log/stream-info.js';
import type { HttpRequest } from '../../../../src/dataplane/codec/request.js';
import {
  CONTINUE,
  type DataStatus,
  type FilterStatus,
  type FilterStream,
  STOP_ITERATION,
  STOP_ITERATION_AND_BUFFER,
  type StreamFilter,
} from '../../../../src/dataplane/http/filters/api.js';
import type { FilterChainEnds } from '../../../../src/dataplane/http/filters/chain-ends.js';
import { FilterRunner } from '../../../../src/dataplane/http/filters/runner.js';

/** Chain ends that record what reaches them. */
function ends(limit = 1024): FilterChainEnds & { log: string[] } {
  const log: string[] = [];
  const out = {
    log,
    req: { headers: [] } as unknown as HttpRequest,
    info: newStreamInfo(null, '', ''),
    ended: false,
    router: {
      hit: null,
      routeCluster: null,
      perRoute: () => undefined,
      clearRouteCache: () => log.push('reroute'),
      decodeHeaders: () => log.push('router headers'),
      decodeData: (c: Buffer, end: boolean) => log.push(`router data ${c}${end ? ' end' : ''}`),
      decodeTrailers: (t: string[]) => log.push(`router trailers ${t.join('=')}`),
    },
    bufferLimit: limit,
    responseLength: -1,
    sendLocalReply(status: number, body: string) {
      log.push(`reply ${status} ${body}`);
      out.ended = true;
    },
    encodedHeaders: (s: number, h: string[]) => log.push(`downstream ${s} ${h.join('=')}`),
    encodedData: (c: Buffer, end: boolean) => log.push(`downstream data ${c}${end ? ' end' : ''}`),
    encodedTrailers: (t: string[]) => log.push(`downstream trailers ${t.join('=')}`),
    decodeWatermark: (above: boolean) => log.push(above ? 'pause reading' : 'resume reading'),
    encodeWatermark: (above: boolean) => log.push(above ? 'pause upstream' : 'resume upstream'),
    decodeTooLarge: () => out.sendLocalReply(413, 'Payload Too Large'),
    encodeTooLarge: () => out.sendLocalReply(500, 'Internal Server Error'),
  };
  return out;
}

/** A filter that records its callbacks into `log` and answers from `answers` (default CONTINUE). */
function recorder(
  name: string,
  log: string[],
  answers: Partial<Record<'dh' | 'eh', FilterStatus> & Record<'dd' | 'dt' | 'ed' | 'et', DataStatus>> = {},
): StreamFilter & { stream: FilterStream | null } {
  const filter = {
    stream: null as FilterStream | null,
    decodeHeaders(s: FilterStream) {
      filter.stream = s;
      log.push(`${name} dh`);
      return answers.dh ?? CONTINUE;
    },
    decodeData(_s: FilterStream, c: Buffer, end: boolean) {
      log.push(`${name} dd ${c}${end ? ' end' : ''}`);
      return answers.dd ?? CONTINUE;
    },
    decodeTrailers(_s: FilterStream, t: string[]) {
      log.push(`${name} dt ${t.join('=')}`);
      return answers.dt ?? CONTINUE;
    },
    encodeHeaders(status: number, _h: string[], s: FilterStream) {
      filter.stream = s;
      log.push(`${name} eh ${status}`);
      return answers.eh ?? CONTINUE;
    },
    encodeData(_s: FilterStream, c: Buffer, end: boolean) {
      log.push(`${name} ed ${c}${end ? ' end' : ''}`);
      return answers.ed ?? CONTINUE;
    },
    encodeTrailers(_s: FilterStream, t: string[]) {
      log.push(`${name} et ${t.join('=')}`);
      return answers.et ?? CONTINUE;
    },
  };
  return filter;
}

const b = (s: string) => Buffer.from(s);

describe('FilterRunner', () => {
  it('decodes in chain order and encodes in reverse, each callback once, everything reaching its end', () => {
    const e = ends();
    const a = recorder('a', e.log);
    const z = recorder('z', e.log);
    const r = new FilterRunner([a, z], e);
    r.decodeHeaders();
    r.decodeData(b('x'), false);
    r.decodeTrailers(['k', 'v']);
    r.encodeHeaders(200, ['h', '1']);
    r.encodeData(b('y'), true);
    assert.deepEqual(e.log, [
      'a dh',
      'z dh',
      'router headers',
      'a dd x',
      'z dd x',
      'router data x',
      'a dt k=v',
      'z dt k=v',
      'router trailers k=v',
      'z eh 200',
      'a eh 200',
      'downstream 200 h=1',
      'z ed y end',
      'a ed y end',
      'downstream data y end',
    ]);
  });

  it("sends on the bytes a data callback returns in place of its piece, and a trailers callback's ahead of the trailers", () => {
    const e = ends();
    const a = recorder('a', e.log, { dd: b('A'), dt: b('last') });
    const z = recorder('z', e.log, { ed: b('Z'), et: b('end') });
    const r = new FilterRunner([a, z], e);
    r.decodeHeaders();
    r.decodeData(b('x'), false);
    r.decodeTrailers(['k', 'v']);
    r.encodeHeaders(200, []);
    r.encodeData(b('y'), false);
    r.encodeTrailers(['t', 'u']);
    assert.deepEqual(e.log.slice(2), [
      'router headers',
      'a dd x',
      'z dd A',
      'router data A',
      'a dt k=v',
      'z dd last',
      'router data last',
      'z dt k=v',
      'router trailers k=v',
      'z eh 200',
      'a eh 200',
      'downstream 200 ',
      'z ed y',
      'a ed Z',
      'downstream data Z',
      'z et t=u',
      'a ed end',
      'downstream data end',
      'a et t=u',
      'downstream trailers t=u',
    ]);
  });

  it('keeps the bytes a trailers callback returns behind a filter holding the headers, in order', () => {
    const e = ends();
    const a = recorder('a', e.log, { dh: STOP_ITERATION, dt: b('tail') });
    const r = new FilterRunner([a, recorder('z', e.log)], e);
    r.decodeHeaders();
    r.decodeData(b('1'), false);
    r.decodeTrailers(['t', 'v']);
    a.stream?.continueDecoding();
    assert.deepEqual(e.log.slice(-6), [
      'z dh',
      'router headers',
      'z dd 1tail',
      'router data 1tail',
      'z dt t=v',
      'router trailers t=v',
    ]);
  });

  it('holds data and trailers behind a filter holding the headers (which sees them) until it continues', () => {
    const e = ends();
    const a = recorder('a', e.log, { dh: STOP_ITERATION });
    const z = recorder('z', e.log);
    const r = new FilterRunner([a, z], e);
    r.decodeHeaders();
    r.decodeData(b('1'), false);
    r.decodeData(b('2'), false);
    r.decodeTrailers(['t', 'v']);
    assert.deepEqual(e.log, ['a dh', 'a dd 1', 'a dd 2', 'a dt t=v']);
    e.log.length = 0;
    // Another filter's continue (z has not seen the headers) does nothing.
    z.stream?.continueDecoding();
    a.stream?.continueDecoding();
    a.stream?.continueDecoding();
    assert.deepEqual(e.log, [
      'z dh',
      'router headers',
      'z dd 12',
      'router data 12',
      'z dt t=v',
      'router trailers t=v',
    ]);
  });

  it('gives a buffering filter every piece and its buffer, then the whole body goes on at its end', () => {
    const e = ends();
    const answers: { dd: FilterStatus } = { dd: STOP_ITERATION_AND_BUFFER };
    const a = recorder('a', e.log, answers);
    const r = new FilterRunner([a, recorder('z', e.log)], e);
    r.decodeHeaders();
    r.decodeData(b('ab'), false);
    r.decodeData(b('cd'), false);
    assert.equal(a.stream?.decodingBuffer?.toString(), 'abcd');
    answers.dd = CONTINUE;
    r.decodeData(b('e'), true);
    assert.deepEqual(e.log.slice(-4), ['a dd cd', 'a dd e end', 'z dd abcde end', 'router data abcde end']);
    assert.equal(a.stream?.decodingBuffer, null);
  });

  it('answers 413 when a buffering decoder outgrows the limit, and nothing runs after', () => {
    const e = ends(4);
    const r = new FilterRunner([recorder('a', e.log, { dd: STOP_ITERATION_AND_BUFFER })], e);
    r.decodeHeaders();
    r.decodeData(b('1234'), false);
    r.decodeData(b('5'), false);
    assert.deepEqual(e.log.slice(-2), ['a dd 5', 'reply 413 Payload Too Large']);
    r.decodeData(b('6'), true);
    assert.equal(e.log.at(-1), 'reply 413 Payload Too Large');
  });

  it('answers 500 when a buffering encoder outgrows the limit', () => {
    const e = ends(2);
    const r = new FilterRunner([recorder('a', e.log, { ed: STOP_ITERATION_AND_BUFFER })], e);
    r.decodeHeaders();
    r.encodeHeaders(200, []);
    r.encodeData(b('123'), false);
    assert.equal(e.log.at(-1), 'reply 500 Internal Server Error');
  });

  it('pauses the sender while held data is over the limit, and resumes it once released', () => {
    const e = ends(2);
    const a = recorder('a', e.log, { dh: STOP_ITERATION });
    const r = new FilterRunner([a], e);
    r.decodeHeaders();
    r.decodeData(b('12'), false);
    assert.ok(!e.log.includes('pause reading'));
    r.decodeData(b('3'), false);
    assert.equal(e.log.at(-1), 'pause reading');
    a.stream?.continueDecoding();
    assert.deepEqual(e.log.slice(-3), ['router headers', 'resume reading', 'router data 123']);
  });

  it('holds the response head and body at an encoder until it continues, then sends them in order', () => {
    const e = ends();
    const a = recorder('a', e.log);
    const z = recorder('z', e.log, { eh: STOP_ITERATION, ed: STOP_ITERATION_AND_BUFFER });
    const r = new FilterRunner([a, z], e);
    r.decodeHeaders();
    r.encodeHeaders(200, ['h', '1']);
    r.encodeData(b('x'), false);
    r.encodeTrailers(['g', '0']);
    assert.ok(!e.log.some((l) => l.startsWith('downstream')));
    assert.equal(z.stream?.encodingBuffer?.toString(), 'x');
    z.stream?.continueEncoding();
    assert.deepEqual(e.log.slice(-6), [
      'a eh 200',
      'downstream 200 h=1',
      'a ed x',
      'downstream data x',
      'a et g=0',
      'downstream trailers g=0',
    ]);
  });

  it('stops at once when a filter answers, and ignores a filter continuing from inside its callback twice', () => {
    const e = ends();
    const early: StreamFilter = {
      decodeHeaders(s) {
        s.continueDecoding();
        return CONTINUE;
      },
    };
    const z = recorder('z', e.log);
    new FilterRunner([early, z], e).decodeHeaders();
    assert.deepEqual(e.log, ['z dh', 'router headers']);
    const e2 = ends();
    const answering: StreamFilter = {
      decodeHeaders(s) {
        s.sendLocalReply(403, 'no');
        return STOP_ITERATION;
      },
    };
    new FilterRunner([answering, recorder('z', e2.log)], e2).decodeHeaders();
    assert.deepEqual(e2.log, ['reply 403 no']);
  });

  it('sends a held response head with the status and length the holding encoder set', () => {
    const e = ends();
    const bridge: StreamFilter & { stream: FilterStream | null } = {
      stream: null,
      decodeHeaders: () => CONTINUE,
      encodeHeaders(_status, _h, s) {
        bridge.stream = s;
        return STOP_ITERATION;
      },
      encodeData: () => STOP_ITERATION_AND_BUFFER,
      encodeTrailers(s) {
        s.responseStatus = 503;
        s.responseLength = s.encodingBuffer?.length ?? 0;
        s.continueEncoding();
        return CONTINUE;
      },
    };
    const a = recorder('a', e.log);
    const r = new FilterRunner([a, bridge], e);
    r.decodeHeaders();
    r.encodeHeaders(200, ['h', '1']);
    r.encodeData(b('xyz'), false);
    assert.equal(bridge.stream?.responseStatus, 200);
    r.encodeTrailers(['g', '2']);
    assert.equal(e.responseLength, 3);
    assert.deepEqual(e.log.slice(-6), [
      'a eh 503',
      'downstream 503 h=1',
      'a ed xyz',
      'downstream data xyz',
      'a et g=2',
      'downstream trailers g=2',
    ]);
  });
});
