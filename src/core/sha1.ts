// SHA-1 in plain JavaScript, synchronous, so a push handover's digest is checked as its message arrives.
// crypto.subtle.digest resolves a turn later (in Node via libuv's thread pool, up to ~1 ms); this takes ~2 µs.

/** SHA-1 of the UTF-8 bytes of `text`, in lowercase hex (as crypto.subtle's and redis.sha1hex). */
export function sha1Hex(text: string): string {
  const bytes = new TextEncoder().encode(text);
  const n = bytes.length;
  // The message, a 1 bit, zeros, and its length in bits (64-bit big-endian), in whole 64-byte blocks.
  const blocks = ((n + 8) >>> 6) + 1;
  const words = new Uint32Array(blocks * 16);
  for (let i = 0; i < n; i++) words[i >>> 2]! |= (bytes[i] as number) << (24 - (i & 3) * 8);
  words[n >>> 2]! |= 0x80 << (24 - (n & 3) * 8);
  words[blocks * 16 - 2] = Math.floor(n / 0x20000000);
  words[blocks * 16 - 1] = n * 8;
  const w = new Uint32Array(80);
  let h0 = 0x67452301, h1 = 0xefcdab89, h2 = 0x98badcfe, h3 = 0x10325476, h4 = 0xc3d2e1f0;
  for (let block = 0; block < blocks; block++) {
    for (let t = 0; t < 16; t++) w[t] = words[block * 16 + t] as number;
    for (let t = 16; t < 80; t++) {
      const x = (w[t - 3] as number) ^ (w[t - 8] as number) ^ (w[t - 14] as number) ^ (w[t - 16] as number);
      w[t] = (x << 1) | (x >>> 31);
    }
    let a = h0, b = h1, c = h2, d = h3, e = h4;
    for (let t = 0; t < 80; t++) {
      const f = t < 20 ? ((b & c) | (~b & d)) + 0x5a827999
        : t < 40 ? (b ^ c ^ d) + 0x6ed9eba1
        : t < 60 ? ((b & c) | (b & d) | (c & d)) + 0x8f1bbcdc
        : (b ^ c ^ d) + 0xca62c1d6;
      const next = (((a << 5) | (a >>> 27)) + f + e + (w[t] as number)) | 0;
      e = d;
      d = c;
      c = (b << 30) | (b >>> 2);
      b = a;
      a = next;
    }
    h0 = (h0 + a) | 0;
    h1 = (h1 + b) | 0;
    h2 = (h2 + c) | 0;
    h3 = (h3 + d) | 0;
    h4 = (h4 + e) | 0;
  }
  return [h0, h1, h2, h3, h4].map((h) => (h >>> 0).toString(16).padStart(8, "0")).join("");
}
