#!/usr/bin/env bash
# Debian packages the test suite uses: protoc (fixtures), prometheus (promtool checks the output
# and the shipped rules; the server scrapes a proxy in test/monitoring/dashboards.test.ts),
# chromium (admin pages in a real browser), curl and nghttp2-client (HTTP/2 peers), nginx-light
# (the HTTP/1 differential test), openssl (certificates made by the TLS tests) and testssl.sh
# (bench/tls/testssl.ts), iptables and iproute2 (the network namespaces of the original destination
# test), haproxy (the benchmarks' peer), faketime (libfaketime: a step of the proxy's wall clock,
# test/control/clock.test.ts), postgresql (the server behind the postgres sandbox's postgres_proxy,
# test/e2e/reference-examples-v3-postgres.test.ts), mariadb-server and mariadb-client (the same for the mysql
# sandbox, test/e2e/reference-examples-mysql.test.ts), and a C toolchain for native/ (node-gyp at `npm ci`).
set -euo pipefail
need=()
command -v protoc >/dev/null || need+=(protobuf-compiler libprotobuf-dev)
{ command -v promtool && command -v prometheus; } >/dev/null || need+=(prometheus)
command -v chromium >/dev/null || need+=(chromium)
command -v curl >/dev/null || need+=(curl)
command -v nghttp >/dev/null || need+=(nghttp2-client)
command -v nginx >/dev/null || need+=(nginx-light)
command -v openssl >/dev/null || need+=(openssl)
command -v testssl >/dev/null || need+=(testssl.sh)
command -v iptables >/dev/null || need+=(iptables)
command -v ip >/dev/null || need+=(iproute2)
command -v haproxy >/dev/null || need+=(haproxy)
command -v faketime >/dev/null || need+=(faketime)
{ command -v psql && ls /usr/lib/postgresql/*/bin/postgres; } >/dev/null 2>&1 || need+=(postgresql)
command -v mariadbd >/dev/null || need+=(mariadb-server mariadb-client)
command -v g++ >/dev/null || need+=(g++)
command -v make >/dev/null || need+=(make)
command -v python3 >/dev/null || need+=(python3)
if [ ${#need[@]} -gt 0 ]; then
  if [ "$(id -u)" = 0 ]; then
    apt-get update -qq
    DEBIAN_FRONTEND=noninteractive apt-get install -y -qq --no-install-recommends "${need[@]}" >/dev/null
  else
    echo "missing Debian packages (run as root to install): ${need[*]}" >&2
  fi
fi
