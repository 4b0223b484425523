// Incoming bytes of one connection as a list of chunks: bodies of any size
// are concatenated once, when complete, not on every read.

export class ByteQueue {
  private chunks: Buffer[] = [];
  length = 0;

  push(b: Buffer): void {
    if (b.length === 0) return;
    this.chunks.push(b);
    this.length += b.length;
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
