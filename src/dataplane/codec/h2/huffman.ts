/**
 * HPACK's Huffman code (RFC 7541 Appendix B). The code is canonical: codes of one length are
 * consecutive and ordered by symbol, so the bit lengths alone define it. Symbol 256 is EOS.
 */
const LENGTHS = [
  13, 23, 28, 28, 28, 28, 28, 28, 28, 24, 30, 28, 28, 30, 28, 28, 28, 28, 28, 28, 28, 28, 30, 28, 28, 28, 28,
  28, 28, 28, 28, 28, 6, 10, 10, 12, 13, 6, 8, 11, 10, 10, 8, 11, 8, 6, 6, 6, 5, 5, 5, 6, 6, 6, 6, 6, 6, 6, 7,
  8, 15, 6, 12, 10, 13, 6, 7, 7, 7, 7, 7, 7, 7, 7, 7, 7, 7, 7, 7, 7, 7, 7, 7, 7, 7, 7, 7, 7, 8, 7, 8, 13, 19,
  13, 14, 6, 15, 5, 6, 5, 6, 5, 6, 6, 6, 5, 7, 7, 6, 6, 6, 5, 6, 7, 6, 5, 5, 6, 7, 7, 7, 7, 7, 15, 11, 14, 13,
  28, 20, 22, 20, 20, 22, 22, 22, 23, 22, 23, 23, 23, 23, 23, 24, 23, 24, 24, 22, 23, 24, 23, 23, 23, 23, 21,
  22, 23, 22, 23, 23, 24, 22, 21, 20, 22, 22, 23, 23, 21, 23, 22, 22, 24, 21, 22, 23, 23, 21, 21, 22, 21, 23,
  22, 23, 23, 20, 22, 22, 22, 23, 22, 22, 23, 26, 26, 20, 19, 22, 23, 22, 25, 26, 26, 26, 27, 27, 26, 24, 25,
  19, 21, 26, 27, 27, 26, 27, 24, 21, 21, 26, 26, 28, 27, 27, 27, 20, 24, 20, 21, 22, 21, 21, 23, 22, 22, 25,
  25, 24, 24, 26, 23, 26, 27, 26, 26, 27, 27, 27, 27, 27, 28, 27, 27, 27, 27, 27, 26, 30,
];

const EOS = 256;
/** Each symbol's code, right-aligned. */
export const CODES = new Uint32Array(257);
export const CODE_BITS = Uint8Array.from(LENGTHS);

function assignCodes(): void {
  const symbols = [...CODE_BITS.keys()].sort(
    (a, b) => (CODE_BITS[a] as number) - (CODE_BITS[b] as number) || a - b,
  );
  let code = 0;
  let bits = CODE_BITS[symbols[0] as number] as number;
  for (const symbol of symbols) {
    const length = CODE_BITS[symbol] as number;
    code *= 2 ** (length - bits);
    bits = length;
    CODES[symbol] = code;
    code += 1;
  }
}
assignCodes();

/*
 * Decoding reads four bits at a time: a state is an inner node of the code tree (256 of them),
 * and each (state, nibble) entry says the next state, the symbol completed on the way (no code
 * is shorter than five bits, so at most one), whether EOS was met (an error), and whether the
 * bits since the last symbol are a valid padding (all ones, fewer than eight).
 */
const EMIT = 1 << 8;
const FAIL = 1 << 18;
const ACCEPT = 1 << 19;
const TRANSITIONS = new Int32Array(256 * 16);

function buildDecoder(): void {
  // Tree nodes: children as 2 * node + bit; a leaf holds -1 - symbol.
  const children: number[] = [0, 0];
  let nodes = 1;
  for (let symbol = 0; symbol <= EOS; symbol++) {
    const length = CODE_BITS[symbol] as number;
    const code = CODES[symbol] as number;
    let node = 0;
    for (let i = length - 1; i >= 0; i--) {
      const bit = Math.floor(code / 2 ** i) & 1;
      const slot = 2 * node + bit;
      if (i === 0) children[slot] = -1 - symbol;
      else {
        if (!children[slot]) {
          children[slot] = nodes;
          children.push(0, 0);
          nodes += 1;
        }
        node = children[slot] as number;
      }
    }
  }
  // A node is a valid place to stop when the path to it is all ones and shorter than a byte.
  const accepting = new Uint8Array(nodes);
  accepting[0] = 1;
  for (let node = 0, depth = 0; depth < 7; depth++) {
    node = children[2 * node + 1] as number;
    accepting[node] = 1;
  }
  for (let state = 0; state < nodes; state++) {
    for (let nibble = 0; nibble < 16; nibble++) {
      let node = state;
      let entry = 0;
      for (let i = 3; i >= 0; i--) {
        const next = children[2 * node + ((nibble >> i) & 1)] as number;
        if (next >= 0) {
          node = next;
          continue;
        }
        const symbol = -1 - next;
        if (symbol === EOS) entry |= FAIL;
        else entry |= EMIT | (symbol << 9);
        node = 0;
      }
      TRANSITIONS[state * 16 + nibble] = entry | node | (accepting[node] ? ACCEPT : 0);
    }
  }
}
buildDecoder();

let scratch = Buffer.allocUnsafe(4096);

/**
 * The Latin-1 string `bytes[start, end)` decodes to, or null when they are not a valid
 * Huffman string (EOS inside, or padding that is not the most significant bits of EOS).
 */
export function huffmanDecode(bytes: Uint8Array, start: number, end: number): string | null {
  // Five bits per symbol at best: this many bytes always suffice.
  const most = Math.ceil(((end - start) * 8) / 5);
  if (scratch.length < most) scratch = Buffer.allocUnsafe(most * 2);
  const out = scratch;
  let written = 0;
  let state = 0;
  let accept = true;
  for (let i = start; i < end; i++) {
    const byte = bytes[i] as number;
    let entry = TRANSITIONS[state * 16 + (byte >> 4)] as number;
    if (entry & FAIL) return null;
    if (entry & EMIT) out[written++] = (entry >> 9) & 0xff;
    state = entry & 0xff;
    entry = TRANSITIONS[state * 16 + (byte & 15)] as number;
    if (entry & FAIL) return null;
    if (entry & EMIT) out[written++] = (entry >> 9) & 0xff;
    state = entry & 0xff;
    accept = (entry & ACCEPT) !== 0;
  }
  if (!accept) return null;
  return out.toString('latin1', 0, written);
}

/** How many bytes `value` (Latin-1) takes Huffman-coded. */
export function huffmanLength(value: string): number {
  let bits = 0;
  for (let i = 0; i < value.length; i++) bits += CODE_BITS[value.charCodeAt(i) & 0xff] as number;
  return Math.ceil(bits / 8);
}

/**
 * Writes `value` Huffman-coded at `out[at]`; returns the offset after it. Padding is EOS's first bits.
 * In 32-bit integers: fewer than 8 bits wait between symbols, and a code longer than 24 bits
 * goes in two parts, so the accumulator never holds more than 31 bits (doubles and powers of two
 * made this 40x slower: about 2 µs for a `date` value, once per response).
 */
export function huffmanEncode(value: string, out: Uint8Array, at: number): number {
  let acc = 0;
  let bits = 0;
  for (let i = 0; i < value.length; i++) {
    const symbol = value.charCodeAt(i) & 0xff;
    let code = CODES[symbol] as number;
    let length = CODE_BITS[symbol] as number;
    if (length > 24) {
      const high = length - 24;
      acc = (acc << high) | (code >>> 24);
      bits += high;
      while (bits >= 8) {
        bits -= 8;
        out[at++] = acc >>> bits;
      }
      acc &= (1 << bits) - 1;
      code &= 0xffffff;
      length = 24;
    }
    acc = (acc << length) | code;
    bits += length;
    while (bits >= 8) {
      bits -= 8;
      out[at++] = acc >>> bits;
    }
    acc &= (1 << bits) - 1;
  }
  if (bits > 0) out[at++] = (acc << (8 - bits)) | (0xff >> bits);
  return at;
}
