import assert from 'node:assert/strict';
import { hostname } from 'node:os';
import { describe, it } from 'node:test';
import {
  compileJsonFormat,
  compileStrftime,
  compileTextFormat,
  DEFAULT_FORMAT,
} from '../../../src/dataplane/access-log/format.js';
import {
  FLAG,
  flagsText,
  newStreamInfo,
  RESPONSE_FLAGS,
  type StreamInfo,
  setDynamicMetadata,
  setFilterState,
} from '../../../src/dataplane/access-log/stream-info.js';
import type { HttpRequest } from '../../../src/dataplane/codec/request.js';

const START = Date.UTC(2016, 3, 15, 20, 17, 0, 310);

function request(overrides: Partial<HttpRequest> = {}): HttpRequest {
  return {
    method: 'GET',
    path: '/search?q=x',
    authority: 'example.com',
    scheme: 'http',
    headers: ['user-agent', 'curl/8', 'x-request-id', 'abc-123', 'x-forwarded-for', '10.0.0.1'],
    protocol: 'HTTP/1.1',
    remoteIp: '127.0.0.1',
    contentLength: 0,
    hasBody: false,
    ...overrides,
  };
}

function info(overrides: Partial<StreamInfo> = {}): StreamInfo {
  return {
    ...newStreamInfo(request(), '127.0.0.1:50000', '127.0.0.1:10000'),
    startTime: START,
    startedAt: 1000,
    firstUpstreamByteAt: 1004.7,
    endedAt: 1012.9,
    responseCode: 200,
    responseHeaders: [
      'content-type',
      'text/plain',
      'x-proxy-upstream-service-time',
      '3',
      'set-cookie',
      'a=1',
      'set-cookie',
      'b=2',
    ],
    bytesReceived: 5,
    bytesSent: 24,
    upstreamHost: '127.0.0.1:8080',
    upstreamCluster: 'web',
    routeName: 'default',
    ...overrides,
  };
}

const one = (format: string, i: StreamInfo = info()) => compileTextFormat(format)(i);

describe('access log text format', () => {
  it('renders the default format as the reference does', () => {
    assert.equal(
      compileTextFormat(DEFAULT_FORMAT)(info()),
      '[2016-04-15T20:17:00.310Z] "GET /search?q=x HTTP/1.1" 200 - 5 24 12 3 "10.0.0.1" "curl/8" "abc-123" "example.com" "127.0.0.1:8080"\n',
    );
  });

  it('%START_TIME% takes strftime arguments, in UTC, with %Nf and %E3S fractions and %s', () => {
    assert.equal(one('%START_TIME(%Y/%m/%dT%H:%M:%S%z)%'), '2016/04/15T20:17:00+0000');
    assert.equal(one('%START_TIME(%s.%3f)%'), '1460751420.310');
    assert.equal(one('%START_TIME(%6f|%9f|%1f)%'), '310000|310000000|3');
    assert.equal(one('%START_TIME(%E3S|%E6S)%'), '00.310|00.310000');
    assert.equal(one('%START_TIME(%a %b %e %T %F %j %%)%'), 'Fri Apr 15 20:17:00 2016-04-15 106 %');
    assert.equal(compileStrftime('%D %R %y %I%p')(START), '04/15/16 20:17 16 08PM');
  });

  it('%REQ(X?Y):Z% reads a header, falls back to the alternative, truncates to Z', () => {
    assert.equal(one('%REQ(USER-AGENT)%'), 'curl/8');
    assert.equal(one('%REQ(X-PROXY-ORIGINAL-PATH?:PATH)%'), '/search?q=x');
    assert.equal(one('%REQ(:METHOD)% %REQ(:AUTHORITY)% %REQ(HOST)%'), 'GET example.com example.com');
    assert.equal(one('%REQ(USER-AGENT):4%'), 'curl');
    assert.equal(one('%REQ(X-MISSING)%'), '-');
    assert.equal(one('%REQ(X-MISSING?X-ALSO-MISSING)%'), '-');
  });

  it('%RESP(...)% reads response headers, repeated ones joined', () => {
    assert.equal(one('%RESP(CONTENT-TYPE)%'), 'text/plain');
    assert.equal(one('%RESP(SET-COOKIE)%'), 'a=1,b=2');
    assert.equal(one('%RESP(X-NONE?CONTENT-TYPE):4%'), 'text');
    assert.equal(one('%RESP(CONTENT-TYPE)%', info({ responseHeaders: null })), '-');
    assert.equal(one('%TRAILER(GRPC-STATUS)%'), '-');
  });

  it('%REQ_WITHOUT_QUERY(...)% drops the query string', () => {
    assert.equal(one('%REQ_WITHOUT_QUERY(:PATH)%'), '/search');
    assert.equal(one('%REQ_WITHOUT_QUERY(X-PROXY-ORIGINAL-PATH?:PATH):3%'), '/se');
  });

  it('renders the numeric and address commands', () => {
    assert.equal(one('%RESPONSE_CODE% %BYTES_RECEIVED% %BYTES_SENT% %DURATION%'), '200 5 24 12');
    assert.equal(one('%RESPONSE_DURATION% %RESPONSE_TX_DURATION%'), '4 8');
    assert.equal(one('%RESPONSE_DURATION%', info({ firstUpstreamByteAt: 0 })), '-');
    assert.equal(one('%UPSTREAM_HOST% %UPSTREAM_CLUSTER% %ROUTE_NAME%'), '127.0.0.1:8080 web default');
    assert.equal(
      one(
        '%DOWNSTREAM_REMOTE_ADDRESS% %DOWNSTREAM_REMOTE_ADDRESS_WITHOUT_PORT% %DOWNSTREAM_DIRECT_REMOTE_ADDRESS%',
      ),
      '127.0.0.1:50000 127.0.0.1 127.0.0.1:50000',
    );
    assert.equal(
      one('%DOWNSTREAM_LOCAL_ADDRESS% %DOWNSTREAM_LOCAL_ADDRESS_WITHOUT_PORT% %DOWNSTREAM_LOCAL_PORT%'),
      '127.0.0.1:10000 127.0.0.1 10000',
    );
    assert.equal(
      one('%DOWNSTREAM_REMOTE_ADDRESS_WITHOUT_PORT%', info({ downstreamRemote: '[::1]:9' })),
      '::1',
    );
    assert.equal(one('%PROTOCOL% %HOSTNAME%'), `HTTP/1.1 ${hostname()}`);
    assert.equal(
      one('%UPSTREAM_HOST% %PROTOCOL% %REQ(:PATH)%', info({ upstreamHost: '', request: null })),
      '- - -',
    );
    assert.equal(
      one('%REQUESTED_SERVER_NAME%|%UPSTREAM_TRANSPORT_FAILURE_REASON%|%CONNECTION_TERMINATION_DETAILS%'),
      '-|-|-',
    );
  });

  it('%RESPONSE_FLAGS% prints the reference letters in its order, - when none', () => {
    assert.equal(one('%RESPONSE_FLAGS%'), '-');
    assert.equal(one('%RESPONSE_FLAGS%', info({ flags: FLAG.URX | FLAG.UF | FLAG.UH })), 'UH,UF,URX');
    for (const letter of RESPONSE_FLAGS) assert.equal(flagsText(FLAG[letter]), letter);
    // All bits set prints every flag in the reference's order.
    assert.equal(
      flagsText((1 << RESPONSE_FLAGS.length) - 1),
      'LH,UH,UT,LR,UR,UF,UC,UO,NR,DI,FI,RL,UAEX,RLSE,DC,URX,SI,IH,DPE,UPE',
    );
  });

  it('keeps literal text around commands and rejects unknown or malformed commands', () => {
    assert.equal(one('a %RESPONSE_CODE% b\n'), 'a 200 b\n');
    assert.throws(() => compileTextFormat('%NOT_A_COMMAND%'), /NOT_A_COMMAND.*not a command/);
    assert.throws(() => compileTextFormat('100% done'), /no valid command at position 3/);
    assert.throws(() => compileTextFormat('%REQ%'), /needs a header name/);
    assert.throws(() => compileTextFormat('%REQ(A?B?C)%'), /HEADER\?ALTERNATIVE/);
    assert.throws(() => compileTextFormat('%DURATION(x)%'), /takes no argument/);
  });
});

describe('dynamic metadata and filter state', () => {
  const recorded = () => {
    const i = info();
    setDynamicMetadata(i, 'envoy.filters.http.rbac', { shadow_effective_policy_id: 'p1', n: 2 });
    setDynamicMetadata(i, 'envoy.filters.http.rbac', { nested: { a: [1, 'b'] } });
    setFilterState(i, 'obj', { k: 'v' });
    setFilterState(i, 'text', 'plain words', true);
    return i;
  };

  it('%DYNAMIC_METADATA(NS:KEY:...)% reads a namespace, a key or a path; strings bare, objects as JSON', () => {
    const i = recorded();
    const ns = 'envoy.filters.http.rbac';
    assert.equal(one(`%DYNAMIC_METADATA(${ns}:shadow_effective_policy_id)%`, i), 'p1');
    assert.equal(one(`%DYNAMIC_METADATA(${ns}:n)%`, i), '2');
    assert.equal(one(`%DYNAMIC_METADATA(${ns}:nested:a)%`, i), '[1,"b"]');
    assert.equal(
      one(`%DYNAMIC_METADATA(${ns})%`, i),
      '{"shadow_effective_policy_id":"p1","n":2,"nested":{"a":[1,"b"]}}',
    );
    assert.equal(one(`%DYNAMIC_METADATA(${ns}:nested):6%`, i), '{"a":[');
    assert.equal(one(`%DYNAMIC_METADATA(${ns}:n:deeper)% %DYNAMIC_METADATA(other:x)%`, i), '- -');
    const typed = compileJsonFormat(
      { m: `%DYNAMIC_METADATA(${ns}:nested)%`, s: '%FILTER_STATE(obj)%' },
      true,
    );
    assert.deepEqual(JSON.parse(typed(i)), { m: { a: [1, 'b'] }, s: { k: 'v' } });
  });

  it('%FILTER_STATE(KEY[:PLAIN|:TYPED])% prints an object as JSON or as text; a read-only one stays', () => {
    const i = recorded();
    assert.equal(
      one('%FILTER_STATE(obj)% %FILTER_STATE(obj:PLAIN)% %FILTER_STATE(text:PLAIN)%', i),
      '{"k":"v"} {"k":"v"} plain words',
    );
    assert.equal(one('%FILTER_STATE(text)% %FILTER_STATE(nothing)%', i), 'plain words -');
    assert.throws(() => setFilterState(i, 'text', 'other'), /'text' is read-only/);
    setFilterState(i, 'obj', 'replaced');
    assert.equal(one('%FILTER_STATE(obj)%', i), 'replaced');
  });

  it('refuses malformed arguments by command', () => {
    assert.throws(() => compileTextFormat('%DYNAMIC_METADATA%'), /DYNAMIC_METADATA\(\)%: expected/);
    assert.throws(() => compileTextFormat('%DYNAMIC_METADATA(ns::k)%'), /NAMESPACE:KEY/);
    assert.throws(() => compileTextFormat('%FILTER_STATE()%'), /FILTER_STATE\(\)%: expected/);
    assert.throws(() => compileTextFormat('%FILTER_STATE(k:RAW)%'), /KEY:PLAIN/);
    assert.throws(() => compileTextFormat('%FILTER_STATE(k:PLAIN:x)%'), /KEY:TYPED/);
  });
});

describe('access log JSON formats', () => {
  it('json_format: every value a string, unset ones -', () => {
    const f = compileJsonFormat(
      { code: '%RESPONSE_CODE%', host: '%UPSTREAM_HOST%', path: 'p=%REQ(:PATH)%', none: '%REQ(X-NONE)%' },
      false,
    );
    const line = f(info());
    assert.ok(line.endsWith('}\n'));
    assert.deepEqual(JSON.parse(line), {
      code: '200',
      host: '127.0.0.1:8080',
      path: 'p=/search?q=x',
      none: '-',
    });
  });

  it('typed_json_format: a lone command keeps its type, unset is null, nested objects nest', () => {
    const f = compileJsonFormat(
      {
        code: '%RESPONSE_CODE%',
        bytes: '%BYTES_SENT%',
        text: 'code %RESPONSE_CODE%',
        none: '%REQ(X-NONE)%',
        up: { host: '%UPSTREAM_HOST%' },
      },
      true,
    );
    assert.deepEqual(JSON.parse(f(info())), {
      code: 200,
      bytes: 24,
      text: 'code 200',
      none: null,
      up: { host: '127.0.0.1:8080' },
    });
  });

  it('escapes what a header carries, so one line stays one JSON object', () => {
    const f = compileJsonFormat({ ua: '%REQ(USER-AGENT)%' }, false);
    const line = f(info({ request: request({ headers: ['user-agent', 'a"b\\c\n'] }) }));
    assert.equal(line.split('\n').length, 2);
    assert.equal(JSON.parse(line).ua, 'a"b\\c\n');
  });
});

/*
 * Root cause: head values are held as latin1 (a character a byte, as peers send them) and a
 * formatted line is text written as UTF-8, so each byte past ASCII was written as two: a
 * client's `José` was logged, and put in local reply bodies, as `JosÃ©`. Values are read as
 * the UTF-8 they carry; bytes that are no UTF-8 become U+FFFD, so a JSON line stays valid.
 */
describe('bytes past ASCII in head values', () => {
  const bytes = (text: string) => Buffer.from(text, 'utf8').toString('latin1');
  const withBytes = (value: string) =>
    info({
      request: request({ path: `/${bytes('café')}`, headers: ['user-agent', value] }),
      responseHeaders: ['x-back', bytes('größe')],
    });

  it('text formats write the bytes a peer sent, config text as its UTF-8', () => {
    const line = one('→ %REQ(USER-AGENT)% %RESP(X-BACK)% %REQ(:PATH)%\n', withBytes(bytes('José ☃')));
    assert.deepEqual(Buffer.from(line, 'utf8'), Buffer.from('→ José ☃ größe /café\n', 'utf8'));
  });

  it('JSON formats hold them as the text they are; a byte that is no UTF-8 is U+FFFD', () => {
    const f = compileJsonFormat({ ua: '%REQ(USER-AGENT)%', back: '%RESP(X-BACK)%' }, false);
    assert.deepEqual(JSON.parse(f(withBytes(bytes('José ☃')))), { ua: 'José ☃', back: 'größe' });
    assert.equal(JSON.parse(f(withBytes('a\xffb'))).ua, 'a\ufffdb');
  });
});
