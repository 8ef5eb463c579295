import { getFips } from 'node:crypto';
import { readFileSync } from 'node:fs';

/** What `scripts/write-build-info.mjs` records next to the compiled `version.js`. */
interface BuildInfo {
  revision: string;
  release: string;
  treeStatus: 'Clean' | 'Modified';
  buildMode: 'RELEASE' | 'DEBUG';
}

/** Running from the TypeScript sources (no build step ran): a development, debug build. */
const UNBUILT: BuildInfo = {
  revision: '0'.repeat(40),
  release: `${packageVersion()}-dev`,
  treeStatus: 'Modified',
  buildMode: 'DEBUG',
};

function packageVersion(): string {
  for (const path of ['../package.json', '../../package.json']) {
    try {
      const pkg = JSON.parse(readFileSync(new URL(path, import.meta.url), 'utf8')) as {
        name?: string;
        version?: string;
      };
      if (pkg.name === 'proxy' && pkg.version) return pkg.version;
    } catch {
      // not at this depth: compiled to dist/src or run from src
    }
  }
  return '0.0.0';
}

function buildInfo(): BuildInfo {
  try {
    return {
      ...UNBUILT,
      ...(JSON.parse(readFileSync(new URL('./build-info.json', import.meta.url), 'utf8')) as BuildInfo),
    };
  } catch {
    return UNBUILT;
  }
}

/** The TLS library Node is linked with (the reference's field names BoringSSL, its library). */
function tlsLibrary(): string {
  const name = process.versions.openssl ? 'OpenSSL' : 'unknown';
  return getFips() === 1 ? `${name}-FIPS` : name;
}

function version(): string {
  const info = buildInfo();
  return [info.revision, info.release, info.treeStatus, info.buildMode, tlsLibrary()].join('/');
}

/**
 * The build version as `--version` and `/server_info` print it: source revision, release
 * (`-dev` unless the commit is tagged `v<version>`), `Clean`/`Modified`, `RELEASE`/`DEBUG`,
 * TLS library.
 */
export const VERSION = version();
