#!/usr/bin/env node
// `npm ci` runs this (the `install` script): builds native/, the socket helper, with the
// node-gyp npm ships. Where it cannot (no C compiler, no Node headers) it says so and lets the
// install finish: the listener options that need the helper are then refused by name.
import { spawnSync } from 'node:child_process';
import { existsSync, realpathSync } from 'node:fs';
import { dirname, join } from 'node:path';

const gyp = process.env.npm_config_node_gyp;
// The headers of the Node running this where it ships them; else npm's `nodedir`. Only
// node_api.h is used, so any Node's headers build an addon every Node loads.
const prefix = dirname(dirname(realpathSync(process.execPath)));
const own = existsSync(join(prefix, 'include', 'node', 'node_api.h')) ? [`--nodedir=${prefix}`] : [];
const run = gyp
  ? spawnSync(process.execPath, [gyp, 'rebuild', '--directory=native', ...own], { stdio: 'inherit' })
  : null;
if (run?.status !== 0) {
  const why = run ? `node-gyp exited with ${run.status ?? run.signal}` : 'not run by npm (no npm_config_node_gyp)';
  console.warn(
    `native/ (the socket helper) was not built: ${why}. Listeners with transparent, freebind, ` +
      'use_original_dst or the original_dst listener filter will be refused (docs/dependencies.md).',
  );
}
