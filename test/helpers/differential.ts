/**
 * The differential harness of the HTTP/1 and HTTP/2 tests: the proxy, nginx and HAProxy in
 * front of one recording origin, and a test per peer that it delivers each case as the proxy
 * does, except where the case names why.
 */
import assert from 'node:assert/strict';
import { after, before, test } from 'node:test';
import { type Haproxy, hasHaproxy, NO_HAPROXY } from './haproxy.js';
import { hcmConfig, startProxy, type TestProxy } from './http-dataplane.js';
import { hasNginx, type Nginx, NO_NGINX, startNginx } from './nginx.js';
import { type RecordingOrigin, recordingOrigin } from './recording-origin.js';

export type PeerName = 'nginx' | 'haproxy';

/** A case: what reaches the origin through the proxy, and why a peer delivers otherwise. */
export interface DifferentialCase<Arrival> {
  name: string;
  proxy: Arrival;
  differs?: Partial<Record<PeerName, string>>;
}

export interface Fronts {
  origin: RecordingOrigin;
  proxy: TestProxy;
  nginx: Nginx | null;
  haproxy: Haproxy | null;
}

/**
 * Starts the origin and the three fronts before the file's tests and stops them after; nginx
 * proxies with `nginxDirectives` beside its `proxy_pass` (and `listenFlags`), HAProxy as
 * `startPeer` starts it. The fronts are filled in once started.
 */
export function frontsOfOneOrigin(options: {
  nginxDirectives: string;
  listenFlags?: string;
  startHaproxy: (originPort: number) => Promise<Haproxy>;
}): Fronts {
  const fronts = {} as Fronts;
  before(async () => {
    const origin = await recordingOrigin();
    fronts.origin = origin;
    fronts.proxy = await startProxy(hcmConfig('origin'), [
      { raw: { name: 'origin' }, addresses: [`127.0.0.1:${origin.port}`] },
    ]);
    fronts.nginx = hasNginx
      ? await startNginx(
          `location / { proxy_pass http://127.0.0.1:${origin.port}; ${options.nginxDirectives} }`,
          options.listenFlags,
        )
      : null;
    fronts.haproxy = hasHaproxy ? await options.startHaproxy(origin.port) : null;
  });
  after(async () => {
    fronts.nginx?.stop();
    fronts.haproxy?.stop();
    await fronts.proxy?.close();
    fronts.origin?.close();
  });
  return fronts;
}

/**
 * A test per peer (skipped where it is not installed): each case reaches the origin through it
 * as through the proxy, or the case names why not. With `again`, a difference counts only if it
 * shows twice: a loaded machine sometimes makes the peer itself refuse.
 */
export function peersDeliverTheSame<Arrival, C extends DifferentialCase<Arrival>>(
  cases: readonly C[],
  fronts: Fronts,
  arrival: (port: number, c: C) => Promise<Arrival>,
  again = false,
): void {
  for (const [peer, skip] of [
    ['nginx', hasNginx ? false : NO_NGINX],
    ['haproxy', hasHaproxy ? false : NO_HAPROXY],
  ] as const) {
    test(`${peer} delivers the same, except where a case names why`, { skip }, async (t) => {
      const port = fronts[peer]?.port ?? 0;
      const unexplained: string[] = [];
      for (const c of cases) {
        const agrees = (got: Arrival) => JSON.stringify(got) === JSON.stringify(c.proxy);
        const reason = c.differs?.[peer];
        let got = await arrival(port, c);
        if (again && !agrees(got) && !reason) {
          got = await arrival(port, c);
          if (agrees(got)) t.diagnostic(`${c.name}: ${peer} agreed only when sent again`);
        }
        const same = agrees(got);
        if (same && reason) t.diagnostic(`${c.name}: ${peer} now agrees with the proxy (${reason})`);
        if (!same && !reason)
          unexplained.push(`${c.name}: proxy ${JSON.stringify(c.proxy)}, ${peer} ${JSON.stringify(got)}`);
      }
      assert.deepEqual(unexplained, []);
    });
  }
}
