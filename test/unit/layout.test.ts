import slotOf from 'cluster-key-slot';
import { describe, expect, it } from 'vitest';
import { Layout, memberTube } from '../../src/store/layout.js';

describe('Layout', () => {
  it('with one shard, keeps every key in {prefix:0} (as before, but for tube-order), in the order the scripts expect', () => {
    const layout = new Layout('rs');
    expect([layout.shardOf('anything'), layout.shardOfId('18446744073709551615')]).toEqual([0, 0]);
    const k = layout.keys(0);
    expect(k.globals).toEqual(['{rs:0}:jobs', '{rs:0}:tube-names', '{rs:0}:delayed', '{rs:0}:reserved',
      '{rs:0}:stats', '{rs:0}:tube-order', '{rs:0}:nodes', '{rs:0}:seq', '{rs:0}:ready-tubes', '{rs:0}:bodies']);
    expect(k.tube('default')).toEqual(['{rs:0}:tube:default', '{rs:0}:tube:default:ready',
      '{rs:0}:tube:default:delayed', '{rs:0}:tube:default:buried', '{rs:0}:tube:default:refs']);
    expect([k.events, k.node('n1'), k.rooms]).toEqual(['{rs:0}:events', '{rs:0}:node:n1', '{rs:0}:rooms']);
    expect(k.room('r')[1]).toBe('{rs:0}:room:r');
  });

  it('with several shards, places a tube by a stable hash and a job by its id', () => {
    const layout = new Layout('rs', 4);
    const counts = [0, 0, 0, 0];
    for (let i = 0; i < 4000; i++) counts[layout.shardOf(`tube-${i}`)]!++;
    for (const n of counts) expect(n).toBeGreaterThan(800); // spread, not piled on one shard
    expect(new Layout('rs', 4).shardOf('emails')).toBe(layout.shardOf('emails'));
    // id = seq * shards + shard
    expect([layout.shardOfId('8'), layout.shardOfId('13'), layout.shardOfId('18446744073709551615')]).toEqual([0, 1, 3]);
    expect(layout.keys(3).tag).toMatch(/^\{rs:3(\.\d+)?\}$/);
    expect(() => layout.keys(4)).toThrow(RangeError);
    expect(() => new Layout('rs', 0)).toThrow(RangeError);
  });

  it('reads the tube back from a delayed/reserved member', () => {
    expect(memberTube('3123my-tube')).toBe('my-tube');
  });

  it('chooses shard tags so that each shard owns a slot in its own 1/N of the slot space (an even split of a cluster holds equal numbers)', () => {
    for (const shards of [2, 3, 4, 12, 16]) {
      const layout = new Layout('redstalk', shards);
      const slots = Array.from({ length: shards }, (_, i) => slotOf(layout.keys(i).tag));
      slots.forEach((slot, i) => {
        expect(slot).toBeGreaterThanOrEqual(Math.floor((i * 16384) / shards));
        expect(slot).toBeLessThan(Math.floor(((i + 1) * 16384) / shards));
      });
      // Three primaries with equal runs of slots, as redis-cli --cluster create makes them: 12 shards are 4, 4 and 4.
      if (shards === 12) expect([0, 1, 2].map((p) => slots.filter((s) => Math.floor((s * 3) / 16384) === p).length)).toEqual([4, 4, 4]);
    }
    // One shard keeps the tag it always had; the shard count key is the same for every count.
    expect(new Layout('rs').keys(0).tag).toBe('{rs:0}');
    expect(new Layout('rs', 7).shardCountKey).toBe(new Layout('rs', 1).shardCountKey);
  });
});
