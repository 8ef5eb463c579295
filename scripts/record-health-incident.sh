#!/usr/bin/env bash
# Records fixtures/health-incident/ from a real run of the proxy through a health incident: host
# b fails its active check, recovers, fails again; host a answers 5xx until outlier detection
# ejects it. Writes the bootstrap, the event log, its golden snapshot (test/control/replay.test.ts)
# and the /clusters the live run showed last, which test/edges/health/incident.test.ts
# compares with the replay of the log. Run it again
# whenever the event vocabulary changes: `scripts/record-health-incident.sh`.
set -euo pipefail
cd "$(dirname "$0")/.."
# The project's own Node (the `node` dependency), whatever the machine's is.
export PATH="$PWD/node_modules/.bin:$PATH"
dir=fixtures/health-incident
tmp=$(mktemp -d)
pids=()
trap 'kill "${pids[@]}" 2>/dev/null || true; rm -rf "$tmp"' EXIT
proxy() { node --import tsx --input-type=module -e "import { main } from './src/main.ts'; await main(process.argv.slice(1));" -- "$@"; }

# Two upstreams in one process; GET /control/<health|status>/<code> sets what they answer.
node -e '
  const http = require("node:http");
  for (const name of ["a", "b"]) {
    const state = { health: 200, status: 200 };
    const server = http.createServer((req, res) => {
      const control = /^\/control\/(health|status)\/(\d+)$/.exec(req.url);
      if (control) { state[control[1]] = Number(control[2]); return res.end("ok"); }
      res.writeHead(req.url === "/healthz" ? state.health : state.status).end(name);
    });
    server.listen(0, "127.0.0.1", () => console.log(name, server.address().port));
  }' >"$tmp/ports" &
pids+=($!)
for _ in $(seq 50); do [ "$(wc -l <"$tmp/ports")" -ge 2 ] && break; sleep 0.1; done
a=$(awk '$1=="a"{print $2}' "$tmp/ports")
b=$(awk '$1=="b"{print $2}' "$tmp/ports")

cat >"$dir/bootstrap.yaml" <<YAML
# Written by scripts/record-health-incident.sh (the upstream ports are the recording's).
admin: { address: { socket_address: { address: 127.0.0.1, port_value: 0 } } }
static_resources:
  clusters:
    - name: web
      connect_timeout: 1s
      common_lb_config: { update_merge_window: 0s }
      load_assignment:
        cluster_name: web
        endpoints:
          - lb_endpoints:
              - endpoint: { address: { socket_address: { address: 127.0.0.1, port_value: $a } } }
              - endpoint: { address: { socket_address: { address: 127.0.0.1, port_value: $b } } }
      health_checks:
        - timeout: 0.5s
          interval: 0.2s
          no_traffic_interval: 0.2s
          unhealthy_threshold: 2
          healthy_threshold: 2
          http_health_check: { path: /healthz }
      outlier_detection: { consecutive_5xx: 3, interval: 0.5s, base_ejection_time: 300s, max_ejection_percent: 100 }
  listeners:
    - name: http
      address: { socket_address: { address: 127.0.0.1, port_value: 0 } }
      filter_chains:
        - filters:
            - name: envoy.http_connection_manager
              typed_config:
                "@type": type.googleapis.com/envoy.config.filter.network.http_connection_manager.v2.HttpConnectionManager
                stat_prefix: ingress
                route_config: { virtual_hosts: [{ name: all, domains: ["*"], routes: [{ match: { prefix: / }, route: { cluster: web } }] }] }
                http_filters: [{ name: envoy.router }]
YAML

rm -f "$dir/events.ndjson"
proxy -c "$dir/bootstrap.yaml" --concurrency 1 --event-log "$dir/events.ndjson" \
  --admin-address-path "$tmp/admin" 2>"$tmp/stderr" &
pids+=($!)
for _ in $(seq 200); do [ -s "$tmp/admin" ] && curl -sf "http://$(cat "$tmp/admin")/ready" >/dev/null && break; sleep 0.1; done
admin="http://$(cat "$tmp/admin")"
port=$(curl -s "$admin/listeners?format=json" |
  node -e 'let s="";process.stdin.on("data",d=>s+=d).on("end",()=>console.log(JSON.parse(s).listener_statuses[0].local_address.socket_address.port_value))')
traffic() { for _ in $(seq "$1"); do curl -s -o /dev/null "http://127.0.0.1:$port/"; done; }
set_upstream() { curl -sf "http://127.0.0.1:$1/control/$2/$3" >/dev/null; }

traffic 10
set_upstream "$b" health 503 && sleep 1
set_upstream "$b" health 200 && sleep 1.5
set_upstream "$a" status 500 && traffic 12 && sleep 0.3
set_upstream "$b" health 503 && sleep 1
curl -sf "$admin/clusters" >"$dir/clusters.live.txt"
curl -sf -X POST "$admin/quitquitquit" >/dev/null || true
wait "${pids[1]}" || true
proxy replay "$dir/events.ndjson" --view snapshot --format json >"$dir/snapshot.golden.json"
echo "recorded $(wc -l <"$dir/events.ndjson") lines in $dir/events.ndjson"
grep health_flags "$dir/clusters.live.txt"
