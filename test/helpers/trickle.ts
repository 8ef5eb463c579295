/** Steady, light traffic for tests that picture it (sparklines, request rates). */
export interface Trickle {
  /** Ends the traffic and resolves once its last request is done. */
  stop(): Promise<void>;
}

/** One request at a time to `url(i)`, `everyMs` apart, until stopped or `maxMs` have passed. */
export function trickle(url: (i: number) => string, everyMs = 20, maxMs = 60_000): Trickle {
  let stopped = false;
  const end = Date.now() + maxMs;
  const done = (async () => {
    for (let i = 1; !stopped && Date.now() < end; i++) {
      await fetch(url(i))
        .then((r) => r.text())
        .catch(() => '');
      await new Promise((r) => setTimeout(r, everyMs));
    }
  })();
  return {
    stop() {
      stopped = true;
      return done;
    },
  };
}
