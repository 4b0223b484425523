import { describe, expect, it } from 'vitest';
import { Layout, memberTube } from '../../src/store/layout.js';

describe('Layout', () => {
  it('with one shard, keeps every key in {prefix:0} (as before, but for tube-order), in the order the scripts expect', () => {
    const layout = new Layout('rs');
    expect([layout.shardOf('anything'), layout.shardOfId('18446744073709551615')]).toEqual([0, 0]);
    const k = layout.keys(0);
    expect(k.globals).toEqual(['{rs:0}:jobs', '{rs:0}:tube-names', '{rs:0}:delayed', '{rs:0}:reserved',
      '{rs:0}:stats', '{rs:0}:tube-order', '{rs:0}:nodes', '{rs:0}:seq', '{rs:0}:ready-tubes']);
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
    expect(layout.keys(3).tag).toBe('{rs:3}');
    expect(() => layout.keys(4)).toThrow(RangeError);
    expect(() => new Layout('rs', 0)).toThrow(RangeError);
  });

  it('reads the tube back from a delayed/reserved member', () => {
    expect(memberTube('3123my-tube')).toBe('my-tube');
  });
});
