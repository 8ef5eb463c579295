#!/usr/bin/env node
// Records, at build time, the facts `proxy --version` prints: the source revision, whether
// this commit is the tagged release, and whether the tree had uncommitted changes.
// Runs as the `prebuild` npm script; outside a git checkout it records zeros.
import { execFileSync } from 'node:child_process';
import { mkdirSync, readFileSync, writeFileSync } from 'node:fs';

const root = new URL('../', import.meta.url);
const git = (...args) => {
  try {
    return execFileSync('git', args, {
      cwd: root,
      encoding: 'utf8',
      stdio: ['ignore', 'pipe', 'ignore'],
    }).trim();
  } catch {
    return null;
  }
};

const { version } = JSON.parse(readFileSync(new URL('package.json', root), 'utf8'));
const revision = git('rev-parse', 'HEAD');
const tag = git('describe', '--exact-match', '--tags', 'HEAD');
const status = git('status', '--porcelain');
const info = {
  revision: revision && /^[0-9a-f]{40}$/.test(revision) ? revision : '0'.repeat(40),
  release: tag === `v${version}` ? version : `${version}-dev`,
  treeStatus: status === '' ? 'Clean' : 'Modified',
  buildMode: 'RELEASE',
};
mkdirSync(new URL('dist/src/', root), { recursive: true });
writeFileSync(new URL('dist/src/build-info.json', root), `${JSON.stringify(info, null, 2)}\n`);
