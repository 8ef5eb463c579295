import { isIP } from 'node:net';
import type { Json } from '../../events/config.js';
import type { Report } from '../bootstrap/report.js';

/** What to write instead, by the address that took a host name. */
const INSTEAD = {
  listener: 'a listener binds an IP, as 0.0.0.0 or ::',
  admin: 'the admin listener binds an IP, as 127.0.0.1 or ::1',
  endpoint: 'STATIC and EDS endpoints are IPs; use type STRICT_DNS or LOGICAL_DNS for a host name',
  sink: 'a stats sink sends to an IP, as the reference, which looks no name up',
} as const;

/**
 * The reference reads a listener's, the admin's, a STATIC cluster's and an EDS endpoint's
 * socket address as an IP, with no lookup, and refuses a host name at load ("malformed IP
 * address: localhost"); only STRICT_DNS and LOGICAL_DNS clusters look names up. A missing or
 * empty address is left to the required-field rule of the message that holds it.
 */
export function checkIpLiteral(
  address: Json | undefined,
  at: string,
  report: Report,
  whose: keyof typeof INSTEAD,
): void {
  if (typeof address !== 'string' || address === '' || isIP(address) !== 0) return;
  report.error(at, `malformed IP address: ${address} (${INSTEAD[whose]})`);
}
