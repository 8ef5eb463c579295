#!/usr/bin/env bash
# Records fixtures/live-run/events.ndjson from a real run of the proxy (traffic, runtime
# changes, a health-check flap, a graceful drain, quit) and its golden snapshot, which
# test/control/replay.test.ts replays. Run it again whenever the event vocabulary changes.
set -euo pipefail
cd "$(dirname "$0")/.."
# The project's own Node (the `node` dependency), whatever the machine's is.
export PATH="$PWD/node_modules/.bin:$PATH"
npm run build --silent
dir=fixtures/live-run
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
rm -f "$dir/events.ndjson"
node bin/proxy.js -c "$dir/bootstrap.yaml" --concurrency 1 --event-log "$dir/events.ndjson" \
  --admin-address-path "$tmp/admin" --drain-time-s 1 --file-flush-interval-msec 100 2>"$tmp/stderr" &
pid=$!
for _ in $(seq 100); do [ -s "$tmp/admin" ] && curl -sf "http://$(cat "$tmp/admin")/ready" >/dev/null && break; sleep 0.1; done
admin="http://$(cat "$tmp/admin")"
port=$(curl -s "$admin/listeners?format=json" |
  node -e 'let s="";process.stdin.on("data",d=>s+=d).on("end",()=>console.log(JSON.parse(s).listener_statuses[0].local_address.socket_address.port_value))')
step() { curl -sf -X POST "$admin/$1" >/dev/null; sleep 0.3; }
for _ in $(seq 5); do curl -sf "http://127.0.0.1:$port/" >/dev/null; done
step 'runtime_modify?upstream.healthy_panic_threshold=25&feature.canary=on'
step healthcheck/fail
step 'runtime_modify?feature.canary='
step healthcheck/ok
step 'drain_listeners?graceful'
sleep 1.5
curl -sf -X POST "$admin/quitquitquit" >/dev/null || true
wait "$pid"
node bin/proxy.js replay "$dir/events.ndjson" --view snapshot --format json >"$dir/snapshot.golden.json"
echo "recorded $(wc -l <"$dir/events.ndjson") lines in $dir/events.ndjson"
