/** What the hot-restart tests share: polling, the sysctl and the proxied upstream. */
import { existsSync, mkdirSync, readdirSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import * as http from 'node:http';
import type * as net from 'node:net';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import type { JsonObject } from '../../events/index.js';
import { HCM_TYPE } from './bootstraps.js';
import { cluster } from './dataplane.js';
import { freePort } from './free-port.js';
import { hcmConfig } from './http-dataplane.js';

/**
 * How long a test of several restarts under load may run (node:test's own limit, which
 * `npm test` sets to 180 s): an epoch started under tsx on the shared 2-core machine took 15 to
 * 35 s to go LIVE (load average 21), and the direct test's three restarts 158 s in all.
 */
export const RESTARTS_TEST_MS = 600_000;

/**
 * Polls `check` every 50 ms; generous by default, as a new epoch on a busy machine takes many
 * seconds to go LIVE (35 s measured, see RESTARTS_TEST_MS).
 */
export async function until(
  check: () => boolean | Promise<boolean>,
  what: string,
  timeoutMs = 120_000,
): Promise<void> {
  const deadline = Date.now() + timeoutMs;
  while (!(await check())) {
    if (Date.now() > deadline) throw new Error(`timed out waiting for ${what}`);
    await new Promise((r) => setTimeout(r, 50));
  }
}

/** Where the test processes that need `tcp_migrate_req` set sign in (a file named by pid each). */
const MIGRATE_HOLDERS = join(tmpdir(), 'proxy-test-tcp-migrate-req');
const MIGRATE_SYSCTL = '/proc/sys/net/ipv4/tcp_migrate_req';

/** Whether process `pid` still runs (a holder killed before its cleanup holds nothing). */
function running(pid: number): boolean {
  try {
    process.kill(pid, 0);
    return true;
  } catch {
    return false;
  }
}

/**
 * The connections still queued on a socket when its epoch closes it move to another socket of
 * the address with `net.ipv4.tcp_migrate_req` (else the kernel resets them), set for the test's
 * duration as docs/hot-restart.md tells operators to; `cleanups` gets the restore.
 *
 * The setting is the machine's (its network namespace's), and the hot-restart test files run
 * side by side (`npm test` runs two files at a time): a file that restored the value it found
 * while the other still restarted epochs made that one's queued connections reset. So each
 * holder signs in under MIGRATE_HOLDERS, the first one records the value it found, and the
 * last one out restores it.
 */
export function migrateQueuedConnections(cleanups: Array<() => void>): void {
  mkdirSync(MIGRATE_HOLDERS, { recursive: true });
  const found = join(MIGRATE_HOLDERS, 'found');
  const me = join(MIGRATE_HOLDERS, String(process.pid));
  writeFileSync(me, '');
  const others = () =>
    readdirSync(MIGRATE_HOLDERS).filter(
      (n) => /^\d+$/.test(n) && Number(n) !== process.pid && running(Number(n)),
    );
  // The first holder in records what the machine had (a record left by a holder that was
  // killed is that value too); `wx` makes one of two starting together the first.
  try {
    writeFileSync(found, readFileSync(MIGRATE_SYSCTL, 'utf8').trim(), { flag: 'wx' });
  } catch (err) {
    if ((err as NodeJS.ErrnoException).code !== 'EEXIST') throw err;
  }
  writeFileSync(MIGRATE_SYSCTL, '1');
  cleanups.push(() => {
    rmSync(me, { force: true });
    if (others().length > 0) return;
    const before = existsSync(found) ? readFileSync(found, 'utf8').trim() : '';
    if (before !== '' && before !== '1') writeFileSync(MIGRATE_SYSCTL, before);
    rmSync(found, { force: true });
  });
}

/**
 * An upstream answering `body`, and a bootstrap with an admin and one HTTP listener on fixed
 * free ports in front of it; `cleanups` gets the upstream's close.
 */
export async function restartableBootstrap(
  body: string,
  cleanups: Array<() => void>,
): Promise<{ bootstrap: JsonObject; port: number; adminPort: number }> {
  const upstream = http.createServer((req, res) => {
    req.resume();
    res.end(body);
  });
  await new Promise<void>((resolve) => upstream.listen(0, '127.0.0.1', resolve));
  cleanups.push(() => {
    upstream.closeAllConnections();
    upstream.close();
  });
  const [port, adminPort] = [await freePort(), await freePort()];
  const bootstrap: JsonObject = {
    admin: { address: { socket_address: { address: '127.0.0.1', port_value: adminPort } } },
    static_resources: {
      clusters: [cluster('up', [(upstream.address() as net.AddressInfo).port])],
      listeners: [
        {
          name: 'http',
          address: { socket_address: { address: '127.0.0.1', port_value: port } },
          filter_chains: [
            {
              filters: [
                {
                  name: 'envoy.http_connection_manager',
                  typed_config: { '@type': HCM_TYPE, ...(hcmConfig('up') as JsonObject) },
                },
              ],
            },
          ],
        },
      ],
    },
  };
  return { bootstrap, port, adminPort };
}
