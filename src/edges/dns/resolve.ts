import { lookup, Resolver } from 'node:dns/promises';
import { isIP } from 'node:net';
import { hostKey } from '../../../reducers/settings/endpoints.js';

/** Addresses of one name, with the smallest record TTL when the resolver reports TTLs. */
export interface Resolution {
  addresses: string[];
  ttlSeconds: number | null;
}

/** `dns_lookup_family` as the reference names it. */
export type LookupFamily = 'AUTO' | 'V4_ONLY' | 'V6_ONLY';

export interface NameResolver {
  /** Rejects when the name does not resolve (NXDOMAIN, no data, timeout, refused). */
  resolve(name: string, family: LookupFamily): Promise<Resolution>;
  close(): void;
}

/**
 * A resolver for a cluster. With `dns_resolvers` it queries those servers directly (c-ares,
 * record TTLs known). Without, it asks the system resolver (`getaddrinfo`: `/etc/hosts`,
 * then the servers of `/etc/resolv.conf`), which reports no TTL. AUTO asks for IPv6 first
 * and falls back to IPv4 when that fails, as the spec says.
 */
export function createNameResolver(
  servers: ReadonlyArray<{ address: string; port: number }>,
  timeoutMs = 5000,
): NameResolver {
  const resolveIn = servers.length > 0 ? serverResolver(servers, timeoutMs) : systemResolver();
  return {
    async resolve(name, family) {
      if (isIP(name) !== 0) return { addresses: [name], ttlSeconds: null };
      if (family === 'V4_ONLY') return resolveIn.one(name, 4);
      if (family === 'V6_ONLY') return resolveIn.one(name, 6);
      try {
        const v6 = await resolveIn.one(name, 6);
        if (v6.addresses.length > 0) return v6;
      } catch {
        // AUTO: no IPv6 answer is not a failure yet; IPv4 decides.
      }
      return resolveIn.one(name, 4);
    },
    close: resolveIn.close,
  };
}

interface FamilyResolver {
  one(name: string, family: 4 | 6): Promise<Resolution>;
  close(): void;
}

function serverResolver(
  servers: ReadonlyArray<{ address: string; port: number }>,
  timeoutMs: number,
): FamilyResolver {
  const resolver = new Resolver({ timeout: timeoutMs, tries: 1 });
  resolver.setServers(servers.map((s) => hostKey(s.address, s.port)));
  return {
    async one(name, family) {
      const records =
        family === 4
          ? await resolver.resolve4(name, { ttl: true })
          : await resolver.resolve6(name, { ttl: true });
      const ttl = records.length > 0 ? Math.min(...records.map((r) => r.ttl)) : null;
      return { addresses: records.map((r) => r.address), ttlSeconds: ttl };
    },
    close: () => resolver.cancel(),
  };
}

function systemResolver(): FamilyResolver {
  return {
    async one(name, family) {
      const found = await lookup(name, { all: true, family });
      return { addresses: found.map((a) => a.address), ttlSeconds: null };
    },
    close: () => {},
  };
}
