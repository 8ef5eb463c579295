import { existsSync } from 'node:fs';
import { type Browser, chromium } from 'playwright-core';

/** Debian's Chromium (`scripts/install-system-deps.sh` installs it); playwright downloads nothing. */
export const CHROMIUM = '/usr/bin/chromium';

/** A reason to skip browser tests, or false when Chromium is there. */
export const noChromium: string | false = !existsSync(CHROMIUM) && `${CHROMIUM} is absent`;

/**
 * Headless Chromium as root on a closed network: no sandbox, and none of the background
 * connections whose refusals would otherwise flood the run.
 */
export function launchChromium(): Promise<Browser> {
  return chromium.launch({
    executablePath: CHROMIUM,
    args: [
      '--headless',
      '--no-sandbox',
      '--disable-gpu',
      '--disable-quic',
      '--no-first-run',
      '--disable-background-networking',
      '--disable-component-update',
      '--disable-sync',
    ],
  });
}
