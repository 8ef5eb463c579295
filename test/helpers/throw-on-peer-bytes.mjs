// Preloaded into a proxy under test (NODE_OPTIONS=--import=<this file>), like
// crash-worker-thread.mjs: on every thread, taking a view of a 64 KB read buffer (what an
// accepted plain socket's read does, src/dataplane/codec/socket-reads.ts) throws when the bytes
// read hold THROW_ON_PEER_BYTES. It stands for the next unknown bug a peer's bytes reach:
// the ones found so far were each fixed, so no real input is left that throws. Plain
// JavaScript: the main thread loads NODE_OPTIONS' imports before its own `--import tsx`.
import { Buffer } from 'node:buffer';

const text = process.env.THROW_ON_PEER_BYTES;
if (text) {
  const marker = Buffer.from(text);
  const subarray = Buffer.prototype.subarray;
  Buffer.prototype.subarray = function (start, end) {
    const view = subarray.call(this, start, end);
    if (start === 0 && this.buffer.byteLength === 64 * 1024 && view.indexOf(marker) !== -1)
      throw new Error('a throw on peer bytes, asked for by the test');
    return view;
  };
}
