// Local-time flags are checked against a fixed zone.
process.env.TZ = 'UTC';

import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import { compileLogFormat, type LogLine } from '../../src/logging/format.js';

/** Saturday 2014-08-23 15:05:06.123456789 UTC. */
const line: LogLine = {
  time: new Date(Date.UTC(2014, 7, 23, 15, 5, 6, 123)),
  nanos: 123_456_789,
  level: 'warning',
  logger: 'upstream',
  message: 'first "line"\nsecond\tline',
  pid: 4242,
  threadId: 3,
  source: { file: 'src/upstream/dns.ts', line: 57, func: 'resolve' },
};

const render = (format: string, l: LogLine = line) => compileLogFormat(format)(l);

describe('compileLogFormat', () => {
  const cases: Array<[string, string]> = [
    ['%v', 'first "line"\nsecond\tline'],
    ['%_', 'first "line"\\nsecond\tline'],
    ['%j', 'first \\"line\\"\\nsecond\\tline'],
    ['%t', '3'],
    ['%P', '4242'],
    ['%n', 'upstream'],
    ['%l', 'warning'],
    ['%L', 'W'],
    ['%a', 'Sat'],
    ['%A', 'Saturday'],
    ['%b', 'Aug'],
    ['%B', 'August'],
    ['%c', 'Sat Aug 23 15:05:06 2014'],
    ['%C', '14'],
    ['%Y', '2014'],
    ['%D', '08/23/14'],
    ['%x', '08/23/14'],
    ['%m', '08'],
    ['%d', '23'],
    ['%H', '15'],
    ['%I', '03'],
    ['%M', '05'],
    ['%S', '06'],
    ['%e', '123'],
    ['%f', '123456'],
    ['%F', '123456789'],
    ['%p', 'PM'],
    ['%r', '03:05:06 PM'],
    ['%R', '15:05'],
    ['%T', '15:05:06'],
    ['%X', '15:05:06'],
    ['%z', '+00:00'],
    ['%%', '%'],
    ['%@', 'src/upstream/dns.ts:57'],
    ['%s', 'dns.ts'],
    ['%g', 'src/upstream/dns.ts'],
    ['%#', '57'],
    ['%!', 'resolve'],
  ];
  for (const [format, expected] of cases) {
    it(`renders ${format}`, () => assert.equal(render(format), expected));
  }

  it('renders the default layout', () => {
    assert.equal(
      render('[%Y-%m-%d %T.%e][%t][%l][%n] [%g:%#] %v'),
      '[2014-08-23 15:05:06.123][3][warning][upstream] [src/upstream/dns.ts:57] first "line"\nsecond\tline',
    );
  });

  it('pads small values and handles midnight on the 12-hour clock', () => {
    const early = { ...line, time: new Date(Date.UTC(2009, 0, 2, 0, 7, 8, 9)), nanos: 9_000_001 };
    assert.equal(
      render('%I %p %r %e %f %F %m/%d %C', early),
      '12 AM 12:07:08 AM 009 009000 009000001 01/02 09',
    );
  });

  it('keeps unknown flags and a trailing % as written', () => {
    assert.equal(render('%q %v %'), '%q first "line"\nsecond\tline %');
  });

  it('asks for source locations only when a source flag is used', () => {
    assert.equal(compileLogFormat('%v').needsSource, false);
    assert.equal(compileLogFormat('[%Y] %v').needsSource, false);
    for (const flag of ['%@', '%s', '%g', '%#', '%!']) assert.equal(compileLogFormat(flag).needsSource, true);
  });

  it('prints empty source fields when no location was captured', () => {
    assert.equal(render('[%g:%#] %v', { ...line, source: undefined, message: 'm' }), '[:] m');
  });
});
