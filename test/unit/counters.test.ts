// A sidecar's counters snapshot (src/server/counters.ts): whole the first
// time, then only what changed (a field gone: ''), whole again when asked.
import { describe, expect, it } from 'vitest';
import { Counters, SNAPSHOT_CHANGES, WAITING_WATCH } from '../../src/server/counters.js';

const pairs = (snapshot: Array<string | number>) => {
  const out = new Map<string, string | number>();
  for (let i = snapshot[0] === SNAPSHOT_CHANGES ? 1 : 0; i < snapshot.length; i += 2) out.set(String(snapshot[i]), snapshot[i + 1]!);
  return out;
};

describe('counters snapshot', () => {
  it('sends every tube once, then only the tubes that changed', () => {
    const c = new Counters();
    for (let i = 0; i < 1000; i++) c.reference(`t${i}`, 'watching', 1);
    const first = c.snapshot();
    expect(first[0]).not.toBe(SNAPSHOT_CHANGES);
    expect(pairs(first).get('watching:t999')).toBe(1);
    c.count('cmd-put');
    c.reference('t5', 'watching', -1);
    c.waitingDelta(['t7'], 1);
    const next = c.snapshot();
    expect(next[0]).toBe(SNAPSHOT_CHANGES);
    const changed = pairs(next);
    expect(changed.get('cmd-put')).toBe(1);
    expect(changed.get('watching:t5')).toBe('');
    expect(changed.get('waiting:t7')).toBe(1);
    expect(changed.get('watching:t7')).toBe(1);
    expect(changed.has('watching:t999')).toBe(false);
    expect(pairs(c.snapshot()).size).toBeLessThan(60); // the globals and command counts only
    c.republish();
    const whole = c.snapshot();
    expect(whole[0]).not.toBe(SNAPSHOT_CHANGES);
    expect(pairs(whole).get('watching:t999')).toBe(1);
    expect(pairs(whole).has('watching:t5')).toBe(false);
  });

  it('counts a waiting connection of many tubes on each of them without a field per tube', () => {
    const c = new Counters();
    const watched = new Set(Array.from({ length: 500 }, (_, i) => `t${i}`));
    c.snapshot();
    c.wideWaitingDelta('n:1', watched, 1);
    expect([c.waiting, c.waitingOn('t42'), c.waitingOn('x')]).toEqual([1, 1, 0]);
    const changed = pairs(c.snapshot());
    expect(changed.get(`${WAITING_WATCH}n:1`)).toBe(1);
    expect([...changed.keys()].some((k) => k.startsWith('waiting:'))).toBe(false);
    c.wideWaitingDelta('n:1', watched, -1);
    expect([c.waiting, c.waitingOn('t42')]).toEqual([0, 0]);
    expect(pairs(c.snapshot()).get(`${WAITING_WATCH}n:1`)).toBe('');
  });
});
