// A sidecar's presence (src/server/presence.ts) over a fake store and fake
// timers: when it looks for dead sidecars, and when it stops serving for want
// of a renewed lease.
import { pino } from 'pino';
import { afterEach, beforeEach, describe, expect, it, vi } from 'vitest';
import { Background } from '../../src/server/background.js';
import { Counters } from '../../src/server/counters.js';
import { Presence } from '../../src/server/presence.js';
import type { JobStore } from '../../src/store/job-store.js';
import { StoreError } from '../../src/store/errors.js';

const BEAT_MS = 100;

/** A store whose registry lists `dead` as dead from the given beat on; nodes() fails at the beats in `failAt`. */
function fakeStore(deadFromBeat: number, failAt: number[] = [], beatsFailAt: (beat: number) => boolean = () => false) {
  let looks = 0;
  const reaped: Array<{ at: number; owner: string }> = [];
  const store = {
    heartbeat: async () => {
      if (beatsFailAt(Math.round(Date.now() / BEAT_MS))) throw new StoreError('failed', "Stream isn't writeable");
      return false;
    },
    refTube: async () => {},
    forgetNode: async () => true,
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

function presence(store: JobStore, onFenced: () => void = () => {}): Presence {
  const log = pino({ level: 'silent' });
  return new Presence('me', store, new Counters(), BEAT_MS, new Background(log), log, () => {}, onFenced);
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

describe('presence: self-fencing', () => {
  beforeEach(() => { vi.useFakeTimers({ now: 0 }); });
  afterEach(() => { vi.useRealTimers(); });

  it('stops serving 2 beats before its lease (5 beats) can lapse, and serves again once a beat renews it', async () => {
    const fenced: number[] = [];
    const { store } = fakeStore(Infinity, [], (beat) => beat >= 2 && beat <= 6);
    const p = presence(store, () => fenced.push(Date.now()));
    await p.start(); // renewed by the beat sent at 0
    expect(p.serving).toBe(true);
    await vi.advanceTimersByTimeAsync(BEAT_MS); // renewed at 100
    await vi.advanceTimersByTimeAsync(3 * BEAT_MS - 1);
    expect([p.serving, fenced]).toEqual([true, []]);
    await vi.advanceTimersByTimeAsync(1); // 100 + 500 - 200
    expect([p.serving, fenced]).toEqual([false, [400]]);
    await vi.advanceTimersByTimeAsync(3 * BEAT_MS); // beats at 500, 600 fail; 700 renews
    p.stop();
    expect([p.serving, fenced]).toEqual([true, [400]]);
  });
});

describe('presence: counter snapshots between beats', () => {
  beforeEach(() => { vi.useFakeTimers({ now: 0 }); });
  afterEach(() => { vi.useRealTimers(); });

  /** Counts heartbeat calls while counters change every 5 ms for 10 beats, with these sidecars live. */
  async function beatsWhileBusy(live: string[]): Promise<number> {
    let beats = 0;
    const store = {
      heartbeat: async () => { beats++; return false; },
      refTube: async () => {}, forgetNode: async () => true, nodeSnapshots: async () => [], releaseHeldBy: async () => 0,
      nodes: async () => ({ live, dead: [] }),
    } as unknown as JobStore;
    const p = presence(store);
    await p.start();
    await vi.advanceTimersByTimeAsync(BEAT_MS + 1); // the first look at who else is live
    beats = 0;
    for (let t = 0; t < 10 * BEAT_MS; t += 5) {
      p.statsChanged();
      await vi.advanceTimersByTimeAsync(5);
    }
    p.stop();
    return beats;
  }

  it('go out every 20 ms while another sidecar is live (its stats add them up)', async () => {
    expect(await beatsWhileBusy(['me', 'other'])).toBeGreaterThanOrEqual(40);
  });

  it('ride on the beats alone: a busy lone sidecar makes no call every 20 ms for nobody', async () => {
    expect(await beatsWhileBusy(['me'])).toBe(10);
  });
});
