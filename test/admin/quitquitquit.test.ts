import assert from 'node:assert/strict';
import { after, it } from 'node:test';
import { scratchDir, spawnProxy, writeFixture } from '../helpers/admin.js';

const scratch = scratchDir();
after(() => scratch.remove());

it('POST /quitquitquit answers OK and the process exits 0; GET first changes nothing', async () => {
  const bootstrap = writeFixture(
    scratch.dir,
    'bootstrap.yaml',
    'admin:\n  address:\n    socket_address: { address: 127.0.0.1, port_value: 0 }\n',
  );
  const proxy = await spawnProxy(bootstrap, scratch.dir);
  try {
    // The admin answers while INITIALIZING; LIVE comes once the data plane is up.
    for (let i = 0; i < 100 && (await fetch(`${proxy.base}/ready`)).status !== 200; i++)
      await new Promise((r) => setTimeout(r, 50));
    const refused = await fetch(`${proxy.base}/quitquitquit`);
    assert.equal(refused.status, 400);
    assert.equal((await fetch(`${proxy.base}/ready`)).status, 200, 'still serving after the GET');
    const res = await fetch(`${proxy.base}/quitquitquit`, { method: 'POST' });
    assert.equal(res.status, 200);
    assert.equal(await res.text(), 'OK\n');
    const code = await Promise.race([
      proxy.exited,
      new Promise<string>((r) => setTimeout(() => r('timeout'), 10_000).unref()),
    ]);
    assert.equal(code, 0);
  } finally {
    if (proxy.child.exitCode === null) proxy.child.kill();
  }
});
