// What a fault test started, stopped after it in reverse order (a failed stop
// is reported, and the rest still run).
import { afterEach } from 'vitest';

export type CleanupList = Array<() => Promise<unknown> | unknown>;

/** A list the test pushes its stops onto; emptied after each test. */
export function cleanupAfterEach(): CleanupList {
  const cleanup: CleanupList = [];
  afterEach(async () => {
    for (const f of cleanup.splice(0).reverse()) {
      try { await f(); } catch (e) { console.error('cleanup failed:', e); }
    }
  }, 60_000);
  return cleanup;
}
