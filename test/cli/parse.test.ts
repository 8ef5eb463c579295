import assert from 'node:assert/strict';
import os from 'node:os';
import { describe, it } from 'node:test';
import type { Options } from '../../src/options.js';
import { DEFAULT_OPTIONS, parseCommandLine } from '../../src/cli/parse.js';

/** Parses with no RESTART_EPOCH in the environment; fails the test on errors. */
function options(...argv: string[]): Options {
  const result = parseCommandLine(argv, {});
  assert.ok(result.ok, `unexpected errors: ${result.ok ? '' : result.errors.join('; ')}`);
  return result.options;
}

/** The errors of a command line that must not parse. */
function errors(...argv: string[]): string[] {
  const result = parseCommandLine(argv, {});
  assert.equal(result.ok, false, `expected ${argv.join(' ')} to be rejected`);
  return result.ok ? [] : result.errors;
}

function rejects(argv: string[], pattern: RegExp): void {
  const found = errors(...argv);
  assert.ok(
    found.some((e) => pattern.test(e)),
    `no error matches ${pattern}: ${found.join('; ')}`,
  );
}

describe('parseCommandLine defaults', () => {
  it('gives every option its spec default', () => {
    const o = options();
    assert.equal(o.configPath, '');
    assert.equal(o.configYaml, '');
    assert.equal(o.mode, 'serve');
    assert.equal(o.adminAddressPath, '');
    assert.equal(o.localAddressIpVersion, 'v4');
    assert.equal(o.baseId, 0);
    assert.equal(o.useDynamicBaseId, false);
    assert.equal(o.baseIdPath, '');
    assert.equal(o.concurrency, os.cpus().length);
    assert.equal(o.logLevel, 'info');
    assert.equal(o.componentLogLevel, '');
    assert.equal(o.cpusetThreads, false);
    assert.equal(o.logPath, '');
    assert.equal(o.logFormat, '[%Y-%m-%d %T.%e][%t][%l][%n] [%g:%#] %v');
    assert.equal(o.logFormatEscaped, false);
    assert.equal(o.restartEpoch, 0);
    assert.equal(o.enableFineGrainLogging, false);
    assert.equal(o.socketPath, '@proxy_domain_socket');
    assert.equal(o.socketMode, 0o600);
    assert.equal(o.hotRestartVersion, false);
    assert.equal(o.serviceCluster, '');
    assert.equal(o.serviceNode, '');
    assert.equal(o.serviceZone, '');
    assert.equal(o.fileFlushIntervalMsec, 10000);
    assert.equal(o.drainTimeS, 600);
    assert.equal(o.drainStrategy, 'gradual');
    assert.equal(o.parentShutdownTimeS, 900);
    assert.equal(o.disableHotRestart, false);
    assert.equal(o.enableMutexTracing, false);
    assert.equal(o.allowUnknownStaticFields, false);
    assert.equal(o.rejectUnknownDynamicFields, false);
    assert.equal(o.ignoreUnknownDynamicFields, false);
    assert.deepEqual(o.disableExtensions, []);
    assert.equal(o.enableCoreDump, false);
    assert.deepEqual(o.statsTags, []);
    assert.equal(o.maxObjNameLen, 60);
    assert.equal(o.maxStats, 16384);
    assert.equal(o.eventLog, '');
    assert.deepEqual({ ...o }, { ...DEFAULT_OPTIONS });
  });
});

describe('parseCommandLine values', () => {
  it('reads every string option, long, short and --name=value forms', () => {
    const o = options(
      '-c',
      'a.yaml',
      '--config-yaml',
      'admin: {}',
      '--admin-address-path=/tmp/a',
      '--base-id-path',
      '/tmp/b',
      '--log-path',
      '/tmp/l',
      '--log-format=%v',
      '--service-cluster',
      'sc',
      '--service-node',
      'sn',
      '--service-zone',
      'sz',
      '--event-log',
      '/tmp/e.ndjson',
      '--socket-path',
      '/tmp/sock',
    );
    assert.equal(o.configPath, 'a.yaml');
    assert.equal(o.configYaml, 'admin: {}');
    assert.equal(o.adminAddressPath, '/tmp/a');
    assert.equal(o.baseIdPath, '/tmp/b');
    assert.equal(o.logPath, '/tmp/l');
    assert.equal(o.logFormat, '%v');
    assert.equal(o.serviceCluster, 'sc');
    assert.equal(o.serviceNode, 'sn');
    assert.equal(o.serviceZone, 'sz');
    assert.equal(o.eventLog, '/tmp/e.ndjson');
    assert.equal(o.socketPath, '/tmp/sock');
    assert.equal(options('--config-path', 'b.json').configPath, 'b.json');
  });

  it('reads --event-log-checkpoint-every as a positive integer', () => {
    assert.equal(options('--event-log-checkpoint-every', '50').eventLogCheckpointEvery, 50);
    assert.equal(options().eventLogCheckpointEvery, undefined);
    rejects(['--event-log-checkpoint-every', '0'], /at least 1/);
    rejects(['--event-log-checkpoint-every', 'x'], /expected a non-negative integer/);
  });

  it('reads the enumerations and rejects other values with the reference texts', () => {
    assert.equal(options('--mode', 'validate').mode, 'validate');
    assert.equal(options('--mode', 'init_only').mode, 'init_only');
    rejects(['--mode', 'check'], /^unknown mode 'check'/);
    assert.equal(options('--local-address-ip-version', 'v6').localAddressIpVersion, 'v6');
    rejects(['--local-address-ip-version', 'v5'], /^unknown IP address version 'v5'/);
    assert.equal(options('--drain-strategy', 'immediate').drainStrategy, 'immediate');
    rejects(['--drain-strategy', 'slow'], /^unknown drain-strategy 'slow'/);
    assert.equal(options().prometheusNames, 'proxy');
    assert.equal(options('--prometheus-names', 'envoy').prometheusNames, 'envoy');
    rejects(
      ['--prometheus-names', 'statsd'],
      /^unknown prometheus-names 'statsd' \(--prometheus-names takes proxy or envoy\)/,
    );
  });

  it('accepts every log level, warn as warning, and rejects others', () => {
    for (const level of ['trace', 'debug', 'info', 'warning', 'error', 'critical', 'off']) {
      assert.equal(options('-l', level).logLevel, level);
    }
    assert.equal(options('--log-level', 'warn').logLevel, 'warning');
    rejects(['-l', 'verbose'], /^invalid log level specified 'verbose'/);
  });

  it('validates --component-log-level components and levels', () => {
    assert.equal(
      options('--component-log-level', 'upstream:debug,admin:warn').componentLogLevel,
      'upstream:debug,admin:warn',
    );
    rejects(['--component-log-level', 'upstream'], /^component log level not correctly specified 'upstream'/);
    rejects(['--component-log-level', 'nosuch:info'], /^invalid component specified 'nosuch'/);
    rejects(['--component-log-level', 'upstream:loud'], /^invalid log level specified 'loud'/);
  });

  it('reads the numeric options and rejects non-integers, negatives and out-of-range values', () => {
    const o = options(
      '--base-id',
      '7',
      '--concurrency',
      '3',
      '--restart-epoch',
      '2',
      '--file-flush-interval-msec',
      '250',
      '--drain-time-s',
      '5',
      '--parent-shutdown-time-s',
      '10',
      '--max-obj-name-len',
      '200',
      '--max-stats',
      '100000000',
    );
    assert.deepEqual(
      [o.baseId, o.concurrency, o.restartEpoch, o.fileFlushIntervalMsec, o.drainTimeS, o.parentShutdownTimeS],
      [7, 3, 2, 250, 5, 10],
    );
    assert.equal(o.maxObjNameLen, 200);
    assert.equal(o.maxStats, 100_000_000);
    for (const name of [
      'base-id',
      'concurrency',
      'restart-epoch',
      'file-flush-interval-msec',
      'drain-time-s',
      'parent-shutdown-time-s',
      'max-stats',
      'max-obj-name-len',
    ]) {
      rejects([`--${name}`, 'abc'], new RegExp(`^invalid value 'abc' for --${name}`));
      rejects([`--${name}`, '1.5'], new RegExp(`^invalid value '1.5' for --${name}`));
      rejects([`--${name}`, '-1'], new RegExp(`^invalid value '-1' for --${name}`));
    }
    rejects(['--base-id', '4294967296'], /^invalid value '4294967296' for --base-id: at most 4294967295/);
  });

  it('refuses times a timer cannot hold: past 2^31-1 ms a Node timer fires after 1 ms', () => {
    // Root cause: the drain, parent-shutdown and flush timers were armed with the option as
    // given, and Node fires a delay above 2^31-1 ms after 1 ms: `--drain-time-s 3000000` made
    // `/drain_listeners?graceful` close every listener at once, and a large flush interval flushed
    // every millisecond.
    for (const name of ['drain-time-s', 'parent-shutdown-time-s']) {
      rejects(
        [`--${name}`, '2147484'],
        new RegExp(`^invalid value '2147484' for --${name}: at most 2147483 \\(24.8 days`),
      );
      assert.equal(options(`--${name}`, '2147483').drainTimeS, name === 'drain-time-s' ? 2147483 : 600);
    }
    rejects(
      ['--file-flush-interval-msec', '2147483648'],
      /^invalid value '2147483648' for --file-flush-interval-msec: at most 2147483647 \(24.8 days/,
    );
    assert.equal(options('--file-flush-interval-msec', '2147483647').fileFlushIntervalMsec, 2 ** 31 - 1);
    rejects(
      ['--max-stats', '100000001'],
      /^the 'max-stats' value specified \(100000001\) is more than the maximum value of 100M$/,
    );
    rejects(
      ['--max-obj-name-len', '59'],
      /^the 'max-obj-name-len' value specified \(59\) is less than the minimum value of 60$/,
    );
  });

  it('runs one worker for --concurrency 0 and uses the cpuset with --cpuset-threads', () => {
    assert.equal(options('--concurrency', '0').concurrency, 1);
    assert.equal(options('--cpuset-threads').concurrency, os.availableParallelism());
    assert.equal(options('--cpuset-threads').cpusetThreads, true);
    assert.equal(options('--cpuset-threads', '--concurrency', '5').concurrency, 5);
  });

  it('takes the restart epoch from RESTART_EPOCH when the option is absent', () => {
    const fromEnv = parseCommandLine([], { RESTART_EPOCH: '3' });
    assert.ok(fromEnv.ok);
    assert.equal(fromEnv.options.restartEpoch, 3);
    const explicit = parseCommandLine(['--restart-epoch', '1'], { RESTART_EPOCH: '3' });
    assert.ok(explicit.ok);
    assert.equal(explicit.options.restartEpoch, 1);
    const bad = parseCommandLine([], { RESTART_EPOCH: 'x' });
    assert.equal(bad.ok, false);
  });

  it('refuses --use-dynamic-base-id with a non-zero restart epoch', () => {
    assert.equal(options('--use-dynamic-base-id').useDynamicBaseId, true);
    rejects(
      ['--use-dynamic-base-id', '--restart-epoch', '2'],
      /^cannot use --restart-epoch=2 with --use-dynamic-base-id$/,
    );
  });

  it('reads --socket-mode as octal and refuses it with an abstract socket path', () => {
    assert.equal(options('--socket-path', '/tmp/s', '--socket-mode', '644').socketMode, 0o644);
    rejects(
      ['--socket-mode', '644'],
      /--socket-mode cannot be used with the abstract socket path '@proxy_domain_socket'/,
    );
    rejects(['--socket-path', '/tmp/s', '--socket-mode', '689'], /^invalid value '689' for --socket-mode/);
  });

  it('sets every switch', () => {
    const o = options(
      '--log-format-escaped',
      '--enable-fine-grain-logging',
      '--disable-hot-restart',
      '--enable-mutex-tracing',
      '--allow-unknown-static-fields',
      '--reject-unknown-dynamic-fields',
      '--ignore-unknown-dynamic-fields',
      '--enable-core-dump',
    );
    assert.equal(o.logFormatEscaped, true);
    assert.equal(o.enableFineGrainLogging, true);
    assert.equal(o.disableHotRestart, true);
    assert.equal(o.enableMutexTracing, true);
    assert.equal(o.allowUnknownStaticFields, true);
    assert.equal(o.rejectUnknownDynamicFields, true);
    assert.equal(o.ignoreUnknownDynamicFields, true);
    assert.equal(o.enableCoreDump, true);
    rejects(['--disable-hot-restart=yes'], /--disable-hot-restart is a switch and takes no value/);
  });

  it('maps the deprecated --allow-unknown-fields with a warning', () => {
    const result = parseCommandLine(['--allow-unknown-fields'], {});
    assert.ok(result.ok);
    assert.equal(result.options.allowUnknownStaticFields, true);
    assert.match(result.warnings[0] ?? '', /--allow-unknown-fields is deprecated/);
  });

  it('checks the --disable-extensions names', () => {
    assert.deepEqual(
      options('--disable-extensions', 'envoy.filters.http/envoy.router,a/b').disableExtensions,
      ['envoy.filters.http/envoy.router', 'a/b'],
    );
    rejects(
      ['--disable-extensions', 'a/b,router'],
      /^invalid extension name 'router' in --disable-extensions/,
    );
    rejects(['--disable-extensions', 'a/b/c'], /^invalid extension name 'a\/b\/c'/);
  });

  it('checks --stats-tag names, values and repeats', () => {
    assert.deepEqual(options('--stats-tag', 'env:prod', '--stats-tag', 'zone:us-east:1').statsTags, [
      { name: 'env', value: 'prod' },
      { name: 'zone', value: 'us-east:1' },
    ]);
    rejects(['--stats-tag', 'env'], /^misformatted --stats-tag 'env'/);
    rejects(['--stats-tag', 'my-env:x'], /the name 'my-env' must be alphanumeric/);
    rejects(['--stats-tag', 'env:a.b'], /the value 'a.b' must not contain '\.'/);
    rejects(['--stats-tag', 'env:a', '--stats-tag', 'env:b'], /--stats-tag name 'env' given more than once/);
  });
});

describe('parseCommandLine errors', () => {
  it('names unknown options, stray arguments, missing values and repeats', () => {
    rejects(['--no-such-option'], /^unknown option '--no-such-option'/);
    rejects(['-x'], /^unknown option '-x'/);
    rejects(['stray'], /^unexpected argument 'stray'/);
    rejects(['--config-path'], /^option --config-path needs a value/);
    rejects(['--log-level', '--mode', 'serve'], /^option --log-level needs a value/);
    rejects(['-c', 'a', '-c', 'b'], /^option --config-path given more than once/);
  });

  it('collects every error rather than stopping at the first', () => {
    const found = errors('--mode', 'x', '-l', 'y', '--base-id', 'z', '--bogus');
    assert.equal(found.length, 4, found.join('; '));
  });

  it('lets --help, --version and --hot-restart-version through as actions', () => {
    const help = parseCommandLine(['--help', '--bogus'], {});
    assert.ok(help.ok);
    assert.equal(help.action, 'help');
    const version = parseCommandLine(['--version'], {});
    assert.ok(version.ok);
    assert.equal(version.action, 'version');
    const hot = parseCommandLine(['--hot-restart-version'], {});
    assert.ok(hot.ok);
    assert.equal(hot.action, 'hot-restart-version');
    assert.equal(hot.options.hotRestartVersion, true);
    const run = parseCommandLine(['-c', 'x.yaml'], {});
    assert.ok(run.ok);
    assert.equal(run.action, 'run');
  });
});
