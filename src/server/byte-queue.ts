// Incoming bytes of one connection as a list of chunks: bodies of any size
// are concatenated once, when complete, not on every read. Small reads are
// copied together into shared blocks: each read is a view of a much larger
// allocation, so keeping them as they come (a body sent a byte at a time)
// would hold hundreds of bytes per byte.

/** Reads smaller than this are copied into a block; larger ones are kept as they are. */
const COPY_BELOW = 4096;
const BLOCK = 16384;

export class ByteQueue {
  private chunks: Buffer[] = [];
  length = 0;
  /** The block small reads are copied into, and how much of it is used. */
  private block: Buffer | null = null;
  private used = 0;

  push(b: Buffer): void {
    if (b.length === 0) return;
    this.length += b.length;
    if (b.length >= COPY_BELOW) {
      this.chunks.push(b);
      return;
    }
    const last = this.chunks[this.chunks.length - 1];
    const block = this.block;
    // The last chunk still ends where the block's free space begins: grow it in place.
    if (block && last && last.buffer === block.buffer && last.byteOffset + last.length === block.byteOffset + this.used
      && this.used + b.length <= block.length) {
      b.copy(block, this.used);
      this.used += b.length;
      this.chunks[this.chunks.length - 1] = block.subarray(last.byteOffset - block.byteOffset, this.used);
      return;
    }
    if (!block || this.used + b.length > block.length) {
      this.block = Buffer.allocUnsafeSlow(BLOCK);
      this.used = 0;
    }
    b.copy(this.block!, this.used);
    this.chunks.push(this.block!.subarray(this.used, this.used + b.length));
    this.used += b.length;
  }

  /** The first min(n, length) bytes as one contiguous buffer (merging chunks only as needed). */
  head(n: number): Buffer {
    const first = this.chunks[0];
    if (!first) return Buffer.alloc(0);
    if (first.length >= n || this.chunks.length === 1) return first.length > n ? first.subarray(0, n) : first;
    let size = 0;
    let k = 0;
    while (k < this.chunks.length && size < n) size += this.chunks[k++]!.length;
    const merged = Buffer.concat(this.chunks.slice(0, k), size);
    this.chunks.splice(0, k, merged);
    return merged.length > n ? merged.subarray(0, n) : merged;
  }

  /** Removes and returns the first n bytes (n <= length). */
  take(n: number): Buffer {
    const out = this.head(n);
    this.skip(n);
    return out;
  }

  /** Drops up to n bytes; returns how many were dropped. */
  skip(n: number): number {
    let left = Math.min(n, this.length);
    const dropped = left;
    while (left > 0) {
      const c = this.chunks[0]!;
      if (c.length <= left) { this.chunks.shift(); left -= c.length; }
      else { this.chunks[0] = c.subarray(left); left = 0; }
    }
    this.length -= dropped;
    return dropped;
  }
}
