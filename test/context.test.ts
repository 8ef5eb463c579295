import assert from 'node:assert/strict';
import { readdirSync, readFileSync } from 'node:fs';
import { join } from 'node:path';
import { test } from 'node:test';
import { fileURLToPath } from 'node:url';
import { runtimeModified } from '../events/index.js';
import { DEFAULT_OPTIONS } from '../src/cli/parse.js';
import { createContext } from '../src/context.js';
import { createLoggers } from '../src/logging/loggers.js';

const quiet = () => createLoggers('fatal');

test('a primary context keeps a history from its first event and has a worker pool only with --concurrency > 1', () => {
  const ctx = createContext({
    options: { ...DEFAULT_OPTIONS, concurrency: 3 },
    log: quiet(),
    exit: () => {},
  });
  ctx.store.dispatch(runtimeModified({ values: { k: 'v' } }), 'test');
  assert.ok(ctx.history);
  assert.equal(ctx.history.stateAt(ctx.store.state.seq)?.runtime, ctx.store.state.runtime);
  assert.ok(ctx.workers);
  assert.equal(ctx.workers.started, false, 'forked by startDataPlane, not by createContext');
  assert.ok(
    ctx.workerStats,
    'the merged stats of the threads are a field, not a registry keyed by the context',
  );
  assert.equal(ctx.contention, null);
  const single = createContext({
    options: { ...DEFAULT_OPTIONS, concurrency: 1, enableMutexTracing: true },
    log: quiet(),
    history: false,
    exit: () => {},
  });
  assert.equal(single.workers, null);
  assert.equal(single.workerStats, null);
  assert.equal(single.history, null);
  assert.deepEqual(single.contention, { numContentions: 0, currentWaitNs: 0, lifetimeWaitNs: 0 });
});

test('a worker context records nothing and forks nothing, whatever its options say', async () => {
  const ctx = createContext({
    options: {
      ...DEFAULT_OPTIONS,
      concurrency: 2,
      enableMutexTracing: true,
      eventLog: '/nonexistent/events.ndjson',
    },
    log: quiet(),
    role: 'worker',
    exit: () => {},
  });
  assert.equal(ctx.history, null);
  assert.equal(ctx.workers, null);
  assert.equal(ctx.workerStats, null);
  assert.equal(ctx.contention, null);
  await ctx.eventLog.flush();
});

test('shutdown runs the steps once, last registered first, then exits with the code; close does not exit', async () => {
  const exits: number[] = [];
  const order: string[] = [];
  const ctx = createContext({
    options: DEFAULT_OPTIONS,
    log: quiet(),
    history: false,
    exit: (code) => exits.push(code),
  });
  ctx.onShutdown(() => {
    order.push('first');
  });
  ctx.onShutdown(async () => {
    order.push('second');
  });
  ctx.onShutdown(() => {
    throw new Error('a failing step does not stop the others');
  });
  await ctx.close();
  assert.deepEqual(order, ['second', 'first']);
  assert.deepEqual(exits, []);
  await ctx.shutdown(3);
  assert.deepEqual(order, ['second', 'first'], 'steps run once');
  assert.deepEqual(exits, [3]);
});

test('no module keeps a registry keyed by the context: each facility is a field of it', () => {
  const src = fileURLToPath(new URL('../src/', import.meta.url));
  const registries = readdirSync(src, { recursive: true, encoding: 'utf8' })
    .filter((f) => f.endsWith('.ts'))
    .filter((f) => /(Weak)?Map<\s*(ServerContext|Core)\b/.test(readFileSync(join(src, f), 'utf8')));
  assert.deepEqual(registries, []);
});
