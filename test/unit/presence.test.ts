// A sidecar's presence (src/server/presence.ts) over a fake store and fake
// timers: when it looks for dead sidecars.
import { pino } from 'pino';
import { afterEach, beforeEach, describe, expect, it, vi } from 'vitest';
import { Background } from '../../src/server/background.js';
import { Counters } from '../../src/server/counters.js';
import { Presence } from '../../src/server/presence.js';
import type { JobStore } from '../../src/store/job-store.js';
import { StoreError } from '../../src/store/errors.js';

const BEAT_MS = 100;

/** A store whose registry lists `dead` as dead from the given beat on; nodes() fails at the beats in `failAt`. */
function fakeStore(deadFromBeat: number, failAt: number[] = []) {
  let looks = 0;
  const reaped: Array<{ at: number; owner: string }> = [];
  const store = {
    heartbeat: async () => false,
    refTube: async () => {},
    forgetNode: async () => {},
    nodeSnapshots: async () => [],
    nodes: async () => {
      const beat = Math.round(Date.now() / BEAT_MS);
      looks++;
      if (failAt.includes(beat)) throw new StoreError('failed', "Stream isn't writeable");
      return { live: ['me'], dead: beat >= deadFromBeat ? ['gone'] : [] };
    },
    releaseHeldBy: async (owner: string) => {
      reaped.push({ at: Math.round(Date.now() / BEAT_MS), owner });
      return 1;
    },
  } as unknown as JobStore;
  return { store, reaped, looks: () => looks };
}

function presence(store: JobStore): Presence {
  const log = pino({ level: 'silent' });
  return new Presence('me', store, new Counters(), BEAT_MS, new Background(log), log, () => {});
}

describe('presence: reaping dead sidecars', () => {
  beforeEach(() => { vi.useFakeTimers({ now: 0 }); });
  afterEach(() => { vi.useRealTimers(); });

  it('looks at every beat, so a lapsed lease is reaped at the next beat (within lease + 1 beat of the death)', async () => {
    const { store, reaped } = fakeStore(3);
    const p = presence(store);
    await p.start();
    await vi.advanceTimersByTimeAsync(3 * BEAT_MS);
    p.stop();
    expect(reaped).toEqual([{ at: 3, owner: 'gone:' }]);
  });

  it('tries a failed reaping again at the next beat', async () => {
    const { store, reaped, looks } = fakeStore(3, [3]);
    const p = presence(store);
    await p.start();
    await vi.advanceTimersByTimeAsync(4 * BEAT_MS);
    p.stop();
    expect(looks()).toBe(4);
    expect(reaped).toEqual([{ at: 4, owner: 'gone:' }]);
  });
});
