// Exponential backoff with equal jitter, shared by the worker's release delays
// and the client's reconnects.

/** The wait after `n` earlier tries: baseMs × 2^n, at most maxMs, then between half and all of it. */
export function backoffMs(n: number, baseMs: number, maxMs: number, random = Math.random): number {
  const ms = Math.min(maxMs, baseMs * 2 ** n);
  return ms / 2 + random() * (ms / 2);
}
