import { after } from 'node:test';

/**
 * The steps that undo what a test file made (servers, proxies, folders), run newest first once
 * its tests end: push each as its resource is made.
 */
export function cleanupsAfterAll(...first: Array<() => unknown>): Array<() => unknown> {
  const cleanups = [...first];
  after(async () => {
    for (const c of cleanups.reverse()) await c();
  });
  return cleanups;
}
