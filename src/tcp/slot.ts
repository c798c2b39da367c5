// The Redis Cluster slot of a key or shard channel, as the server computes it: CRC16 of its hash tag.

const encoder = new TextEncoder();

/** The slot (0-16383) of `key`: of the text between the first `{` and the next `}` when that is not empty. */
export function slotOf(key: string): number {
  let bytes = encoder.encode(key);
  const open = bytes.indexOf(0x7b);
  const close = open < 0 ? -1 : bytes.indexOf(0x7d, open + 1);
  if (close > open + 1) bytes = bytes.subarray(open + 1, close);
  return crc16(bytes) & 16383;
}

/** CRC16-CCITT (XMODEM), the variant Redis Cluster uses. */
function crc16(bytes: Uint8Array): number {
  let crc = 0;
  for (const byte of bytes) {
    crc ^= byte << 8;
    for (let bit = 0; bit < 8; bit++) crc = crc & 0x8000 ? ((crc << 1) ^ 0x1021) & 0xffff : (crc << 1) & 0xffff;
  }
  return crc;
}
