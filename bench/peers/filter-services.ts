/**
 * The services the filters part's ext_authz and ratelimit filters call, as a child process so
 * their CPU is not the measured process's: the tests' own gRPC servers
 * (`test/helpers/authz-servers.ts`, `@grpc/grpc-js`), an authorizer that allows every request
 * and a rate limit service that answers OK to every one, on the v2 and v3 paths. Prints
 * `listening <authz port> <ratelimit port>` once both are bound; SIGTERM stops it.
 */
import { unaryServer } from '../../test/helpers/authz-servers.js';

const authz = await unaryServer(
  ['/envoy.service.auth.v2.Authorization/Check', '/envoy.service.auth.v3.Authorization/Check'],
  'envoy.service.auth.v2.CheckRequest',
  'envoy.service.auth.v2.CheckResponse',
  () => ({ status: { code: 0 }, ok_response: {} }),
);
const ratelimit = await unaryServer(
  [
    '/envoy.service.ratelimit.v2.RateLimitService/ShouldRateLimit',
    '/envoy.service.ratelimit.v3.RateLimitService/ShouldRateLimit',
  ],
  'envoy.service.ratelimit.v2.RateLimitRequest',
  'envoy.service.ratelimit.v2.RateLimitResponse',
  () => ({ overall_code: 'OK' }),
);
// The servers keep every request for the tests to look at: not here, over a whole run.
setInterval(() => {
  authz.seen.length = 0;
  ratelimit.seen.length = 0;
}, 1000);
process.on('SIGTERM', () => {
  authz.close();
  ratelimit.close();
  process.exit(0);
});
process.stdout.write(`listening ${authz.port} ${ratelimit.port}\n`);
