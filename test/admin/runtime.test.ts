import assert from 'node:assert/strict';
import { mkdirSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { after, before, describe, it } from 'node:test';
import { scratchDir, startTestAdmin, type TestAdmin } from '../helpers/admin.js';
import { richBootstrap } from './fixtures.js';

interface RuntimeBody {
  layers: string[];
  entries: Record<string, { final_value: string; layer_values: string[] }>;
}

describe('/runtime and /runtime_modify', () => {
  const scratch = scratchDir();
  let admin: TestAdmin;
  const runtime = async () => (await (await admin.get('/runtime')).json()) as RuntimeBody;

  before(async () => {
    mkdirSync(join(scratch.dir, 'health'), { recursive: true });
    writeFileSync(join(scratch.dir, 'health', 'min'), '7\n');
    writeFileSync(join(scratch.dir, 'disk_only'), 'on');
    admin = await startTestAdmin(richBootstrap(scratch.dir));
  });
  after(async () => {
    await admin.close();
    scratch.remove();
  });

  it('shows the layers in stack order with static and disk values read at start', async () => {
    const body = await runtime();
    assert.deepEqual(body.layers, ['static', 'disk', 'admin']);
    assert.deepEqual(body.entries['health.min'], { final_value: '7', layer_values: ['5', '7', ''] });
    assert.deepEqual(body.entries.disk_only, { final_value: 'on', layer_values: ['', 'on', ''] });
    assert.deepEqual(body.entries.flag, { final_value: 'true', layer_values: ['true', '', ''] });
  });

  it('sets, overrides and deletes admin values at once', async () => {
    const set = await admin.post('/runtime_modify?new.key=1&health.min=9');
    assert.equal(set.status, 200);
    assert.equal(await set.text(), 'OK\n');
    let body = await runtime();
    assert.deepEqual(body.entries['new.key'], { final_value: '1', layer_values: ['', '', '1'] });
    assert.deepEqual(body.entries['health.min'], { final_value: '9', layer_values: ['5', '7', '9'] });

    await admin.post('/runtime_modify?health.min=');
    body = await runtime();
    assert.deepEqual(body.entries['health.min'], { final_value: '7', layer_values: ['5', '7', ''] });
  });

  it('cannot delete disk values: an empty value only drops an admin override', async () => {
    await admin.post('/runtime_modify', 'disk_only=');
    const body = await runtime();
    assert.deepEqual(body.entries.disk_only, { final_value: 'on', layer_values: ['', 'on', ''] });
  });

  it('answers no parameters with 400 and the usage text', async () => {
    const res = await admin.post('/runtime_modify');
    assert.equal(res.status, 400);
    assert.equal(
      await res.text(),
      'usage: /runtime_modify?key1=value1&key2=value2&keyN=valueN\n' +
        '       or send the parameters as form values\n' +
        'use an empty value to remove a previously added override',
    );
  });
});
