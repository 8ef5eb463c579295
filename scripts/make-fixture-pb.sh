#!/bin/sh
# Encodes the text-proto bootstrap fixtures to binary with Debian's protoc and our own
# schemas (proto/), so the .pb fixtures prove that bytes written by a real protobuf
# encoder decode in the loader. Needs protobuf-compiler and libprotobuf-dev
# (/usr/include/google/protobuf/*.proto). Run from anywhere: sh scripts/make-fixture-pb.sh
set -eu
cd "$(dirname "$0")/.."
for name in full invalid; do
  protoc -I proto -I /usr/include \
    --encode=envoy.config.bootstrap.v2.Bootstrap \
    proto/envoy/config/bootstrap/v2.proto \
    proto/envoy/config/filter/network/http_connection_manager/v2.proto \
    proto/envoy/config/filter/network/tcp_proxy/v2.proto \
    proto/envoy/config/filter/http/router/v2.proto \
    < "fixtures/bootstrap/$name.pb_text" > "fixtures/bootstrap/$name.pb"
  echo "fixtures/bootstrap/$name.pb: $(wc -c < "fixtures/bootstrap/$name.pb") bytes"
done
