import assert from 'node:assert/strict';
import { test } from 'node:test';
import { runProxy } from '../helpers/cli.js';

test('proxy restarter: usage without arguments, and the epoch is its own to set', async () => {
  const bare = await runProxy(['restarter']);
  assert.equal(bare.code, 1);
  assert.match(bare.stderr, /usage: proxy restarter -- PROXY_ARGS/);
  const epoch = await runProxy(['restarter', '--', '-c', 'x.yaml', '--restart-epoch', '2']);
  assert.equal(epoch.code, 1);
  assert.match(epoch.stderr, /the restarter sets the epoch itself \(RESTART_EPOCH\)/);
});

test('proxy restarter: exits with the status of its last epoch', async () => {
  const run = await runProxy(['restarter', '--', '-c', '/nonexistent/bootstrap.yaml']);
  assert.equal(run.code, 1);
  assert.match(run.stderr, /restarter: started epoch 0/);
  assert.match(run.stderr, /restarter: epoch 0 exited \(status 1\)/);
});
