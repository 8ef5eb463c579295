import assert from 'node:assert/strict';
import { existsSync, mkdtempSync, readFileSync, renameSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { after, describe, it } from 'node:test';
import { setTimeout as sleep } from 'node:timers/promises';
import { logLevelsChanged } from '../../events/index.js';
import { Store } from '../../src/control/store.js';
import {
  createLoggers,
  type Loggers,
  type LoggingOptions,
  listLoggers,
  reopenLogs,
  setAllLevels,
  setLevel,
} from '../../src/logging/loggers.js';
import { bindLoggingToStore } from '../../src/logging/store-binding.js';

const dir = mkdtempSync(join(tmpdir(), 'proxy-logging-'));
const opened: Loggers[] = [];
after(() => {
  for (const loggers of opened) loggers.close();
  rmSync(dir, { recursive: true, force: true });
});

let fileCount = 0;
/** Loggers writing to a fresh file; returns them and a reader of that file after a flush. */
function fileLoggers(options: Partial<LoggingOptions>) {
  const logPath = join(dir, `log-${fileCount++}.log`);
  const loggers = createLoggers({
    logFormat: '%l %n %v',
    fileFlushIntervalMsec: 60_000,
    ...options,
    logPath,
  });
  opened.push(loggers);
  const read = () => {
    loggers.flush();
    return existsSync(logPath) ? readFileSync(logPath, 'utf8') : '';
  };
  return { loggers, logPath, read };
}

describe('createLoggers', () => {
  it('lists the reference logger names in registry order at the -l level', () => {
    const { loggers } = fileLoggers({ logLevel: 'debug' });
    const list = loggers.list();
    assert.deepEqual(
      list.slice(0, 3).map((l) => l.name),
      ['admin', 'aws', 'assert'],
    );
    assert.ok(list.some((l) => l.name === 'upstream'));
    assert.ok(list.every((l) => l.level === 'debug'));
  });

  it('filters by level, with --component-log-level overriding -l', () => {
    const { loggers, read } = fileLoggers({
      logLevel: 'info',
      componentLogLevel: 'upstream:debug,admin:error',
    });
    loggers.get('upstream').debug('upstream debug');
    loggers.get('config').debug('config debug');
    loggers.get('config').info('config info');
    loggers.get('admin').warn('admin warning');
    loggers.get('admin').error('admin error');
    assert.equal(read(), 'debug upstream upstream debug\ninfo config config info\nerror admin admin error\n');
  });

  it('changes levels one at a time and all at once, also through the module functions', () => {
    const { loggers, read } = fileLoggers({});
    assert.equal(loggers.setLevel('router', 'trace'), true);
    assert.equal(loggers.setLevel('nosuch', 'trace'), false);
    loggers.get('router').trace('traced');
    loggers.get('http').debug('hidden');
    assert.equal(read(), 'trace router traced\n');
    loggers.setAllLevels('off');
    loggers.get('router').fatal('silenced');
    assert.equal(read(), 'trace router traced\n');
    assert.ok(loggers.list().every((l) => l.level === 'off'));
    // The module-level API acts on the most recently created loggers.
    const latest = fileLoggers({});
    assert.equal(setLevel('upstream', 'critical'), true);
    assert.equal(listLoggers().find((l) => l.name === 'upstream')?.level, 'critical');
    setAllLevels('warning');
    assert.ok(latest.loggers.list().every((l) => l.level === 'warning'));
  });

  it('maps bunyan fatal to critical and appends extra fields to the message', () => {
    const { loggers, read } = fileLoggers({});
    loggers.get('main').fatal('stopping');
    loggers.get('upstream').info({ cluster: 'svc', hosts: 2 }, 'added');
    loggers.get('main').error({ err: new Error('boom') }, 'failed');
    const text = read();
    assert.match(text, /^critical main stopping\n/);
    assert.match(text, /info upstream added \{"cluster":"svc","hosts":2\}\n/);
    assert.match(text, /error main failed \{"err":"Error: boom\\n {4}at /);
  });

  it('prints the caller source location for the default format', () => {
    const { loggers, read } = fileLoggers({ logFormat: '[%g:%#] [%s] %v' });
    loggers.get('main').info('located');
    assert.match(
      read(),
      /^\[(dist\/)?test\/logging\/loggers\.test\.(ts|js):\d+\] \[loggers\.test\.(ts|js)\] located\n$/,
    );
  });

  it('escapes each line with --log-format-escaped', () => {
    const { loggers, read } = fileLoggers({ logFormatEscaped: true });
    loggers.get('main').info('two\nlines');
    assert.equal(read(), 'info main two\\nlines\n');
  });

  it('names loggers by source file with --enable-fine-grain-logging', () => {
    const { loggers, read } = fileLoggers({ enableFineGrainLogging: true });
    loggers.get('upstream').info('fine');
    const names = loggers.list().map((l) => l.name);
    assert.equal(names.length, 1);
    assert.match(names[0]!, /^(dist\/)?test\/logging\/loggers\.test\.(ts|js)$/);
    assert.equal(read(), `info ${names[0]} fine\n`);
  });

  it('buffers file writes until the flush interval', async () => {
    const logPath = join(dir, 'interval.log');
    const loggers = createLoggers({ logFormat: '%v', logPath, fileFlushIntervalMsec: 100 });
    opened.push(loggers);
    loggers.get('main').info('buffered');
    assert.equal(readFileSync(logPath, 'utf8'), '');
    await sleep(300);
    assert.equal(readFileSync(logPath, 'utf8'), 'buffered\n');
  });

  it('reopens the log file on SIGUSR1 and on reopenLogs()', async () => {
    const { loggers, logPath, read } = fileLoggers({});
    loggers.get('main').info('before rotation');
    loggers.flush();
    renameSync(logPath, `${logPath}.1`);
    process.kill(process.pid, 'SIGUSR1');
    await sleep(100);
    assert.ok(existsSync(logPath), 'SIGUSR1 did not create a new log file');
    loggers.get('main').info('after rotation');
    assert.equal(read(), 'info main after rotation\n');
    assert.equal(readFileSync(`${logPath}.1`, 'utf8'), 'info main before rotation\n');

    renameSync(logPath, `${logPath}.2`);
    reopenLogs();
    loggers.get('main').info('after reopen');
    assert.equal(read(), 'info main after reopen\n');
  });

  it('names --log-path when the file cannot be opened', () => {
    assert.throws(
      () => createLoggers({ logPath: join(dir, 'no', 'such', 'dir', 'x.log') }),
      /cannot open --log-path '.*x\.log': ENOENT/,
    );
  });
});

describe('bindLoggingToStore', () => {
  it('records the start-up levels in the snapshot and applies level events', () => {
    const { loggers } = fileLoggers({ componentLogLevel: 'upstream:debug' });
    const store = new Store();
    const subscription = bindLoggingToStore(loggers, store);
    try {
      assert.equal(store.state.logging.levels.upstream, 'debug');
      assert.equal(store.state.logging.levels.admin, 'info');
      store.dispatch(logLevelsChanged({ levels: { admin: 'trace', router: 'error' } }), 'admin');
      const levels = Object.fromEntries(loggers.list().map((l) => [l.name, l.level]));
      assert.equal(levels.admin, 'trace');
      assert.equal(levels.router, 'error');
      assert.equal(levels.upstream, 'debug');
    } finally {
      subscription.unsubscribe();
      store.close();
    }
  });
});
