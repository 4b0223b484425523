// The batches of the shards one Redis node holds, in one call: batch.lua's
// sections variant (src/store/redis/scripts.ts) runs each shard's batch as a
// call of its own would, in turn; and so for the heartbeat and the promotion
// sweep, which every shard gets. With --shards on one Redis, or several
// shards per primary of a Redis Cluster, what a turn sends then costs one
// call per node, not one per shard (a call's fixed cost is most of a small
// one's). The call declares no keys, so it goes to the node itself; on a
// Redis Cluster each section first looks up a key of its slot that never
// exists (ShardKeys.slotProbe), which Redis refuses unless the node serves
// that slot and it is not moving: then the call ran nothing, and the batches
// go in calls of their own, which Redis routes and redirects (MOVED, ASK,
// TRYAGAIN) as ever.
import { Cluster, type Redis } from 'ioredis';
import calculateSlot from 'cluster-key-slot';
import { byShard, NothingRan, type CallGroups, type Section } from '../sharded.js';
import type { OpResult } from '../ops.js';
import { StoreError } from '../errors.js';
import type { Layout } from '../layout.js';
import { storeError, type RedisClient } from './connect.js';
import { sendEncoded } from './encoded-call.js';
import type { BoundScript } from './functions.js';
import { promoted, type Promoted, type RedisJobStore, type ScriptCall } from './job-store.js';
import { RespWriter } from './resp.js';
import { TRY_SHARDS } from './scripts.js';

/** Refusals of a call before it ran: its batches may go again, each in its own call. */
const RAN_NOTHING = new RegExp(`^(?:${TRY_SHARDS}|OOM|READONLY|CLUSTERDOWN|LOADING|MASTERDOWN|BUSY)\\b`);

export class NodeCalls implements CallGroups {
  private readonly writer = new RespWriter();
  /** Each shard's slot (a Redis Cluster routes by it). */
  private readonly slots: readonly number[];

  constructor(
    private readonly redis: RedisClient,
    private readonly shards: readonly RedisJobStore[],
    private readonly layout: Layout,
    /** The job functions, with their Sections variants. */
    private readonly scripts: ReadonlyMap<string, BoundScript>,
  ) {
    this.slots = shards.map((_, i) => calculateSlot(layout.keys(i).globals[0]!));
  }

  /** One Redis: every shard's. A Redis Cluster: the primary serving the shard's slot, as last told (null: not known yet). */
  groupOf(shard: number): string | null {
    if (!(this.redis instanceof Cluster)) return '';
    return this.redis.slots[this.slots[shard]!]?.[0] ?? null;
  }

  async apply(group: string, sections: readonly Section[]): Promise<Array<Array<OpResult | StoreError> | Error>> {
    let raw: unknown[];
    try {
      raw = await this.send(group, 'batch', (w, cluster) => {
        for (const { shard, ops } of sections) this.shards[shard]!.writeSection(w, ops, cluster);
      }, sections.length);
    } catch (err) {
      if (err instanceof NothingRan) throw err;
      for (const { shard, ops } of sections) this.shards[shard]!.unsure(ops);
      // A call that failed once it ran may have applied the sections before the failure.
      const failure = storeError(err);
      throw failure.kind === 'failed' ? new StoreError('unknown', failure.message) : failure;
    }
    return Promise.all(sections.map(({ shard, ops }, i) => {
      const r = raw[i];
      if (r instanceof Error) { // the section refused its ops before it ran them (batch.lua)
        this.shards[shard]!.unsure(ops);
        return storeError(r);
      }
      return this.shards[shard]!.settleSection(ops, r as unknown[]).catch(storeError);
    }));
  }

  /** Renews the lease in every shard, one call per node: whether each shard had none. */
  heartbeat(node: string, ttlMs: number, snapshotOf: (shard: number) => ReadonlyArray<string | number>): Promise<boolean[]> {
    return this.everyShard('heartbeat',
      (shard) => this.shards[shard]!.heartbeatCall(node, ttlMs, snapshotOf(shard)),
      (shard) => this.shards[shard]!.heartbeat(node, ttlMs, snapshotOf(shard)),
      (raw) => raw === 1);
  }

  /** The promotion sweep of every shard, one call per node (after each shard's read of what is due). */
  promoteDue(limit: number): Promise<Promoted[]> {
    return this.everyShard('promoteDue',
      (shard) => this.shards[shard]!.promoteCall(limit),
      (shard) => this.shards[shard]!.promoteDue(limit),
      promoted);
  }

  /**
   * A script run in every shard: the shards of a node as sections of one call,
   * a shard alone where its node holds no other (or is not known); a node's
   * call that ran nothing goes shard by shard.
   */
  private async everyShard<R>(script: string, callOf: (shard: number) => ScriptCall | Promise<ScriptCall>,
    alone: (shard: number) => Promise<R>, result: (raw: unknown) => R): Promise<R[]> {
    const groups = byShard(this.shards.keys(), (shard) => this.groupOf(shard));
    const out: R[] = new Array(this.shards.length);
    await Promise.all([...groups].map(async ([group, shards]) => {
      if (group === null || shards.length === 1) {
        await Promise.all(shards.map(async (shard) => { out[shard] = await alone(shard); }));
        return;
      }
      const calls = await Promise.all(shards.map(callOf));
      try {
        const raw = await this.send(group, script, (w, cluster) => {
          calls.forEach(({ keys, args }, i) => {
            w.string(cluster ? this.layout.keys(shards[i]!).slotProbe : '');
            w.int(keys.length);
            w.int(args.length);
            for (const k of keys) w.string(k);
            for (const a of args) writeArg(w, a);
          });
        }, shards.length);
        shards.forEach((shard, i) => {
          if (raw[i] instanceof Error) throw storeError(raw[i]);
          out[shard] = result(raw[i]);
        });
      } catch (err) {
        if (!(err instanceof NothingRan)) throw err;
        await Promise.all(shards.map(async (shard) => { out[shard] = await alone(shard); }));
      }
    }));
    return out;
  }

  /**
   * One call of a script's Sections variant to a group's node, its sections
   * written by `write`: their replies. NothingRan when it was refused whole.
   */
  private async send(group: string, script: string, write: (w: RespWriter, cluster: boolean) => void, count: number): Promise<unknown[]> {
    const cluster = this.redis instanceof Cluster;
    const link = cluster ? this.node(group) : this.redis;
    if (!link) throw new NothingRan(`no link to ${group}`);
    const { head, reload } = this.scripts.get(`${script}Sections`)!;
    const w = this.writer;
    w.int(0);
    w.int(count);
    write(w, cluster);
    try {
      return (await sendEncoded(link, w.command(head, 2), null, reload)) as unknown[];
    } catch (err) {
      if (err instanceof Error && RAN_NOTHING.test(err.message)) throw new NothingRan(err.message);
      throw err;
    }
  }

  private node(key: string): Redis | undefined {
    return (this.redis as Cluster).nodes('master').find((n) => `${n.options.host}:${n.options.port}` === key);
  }
}

function writeArg(w: RespWriter, a: string | number | Buffer): void {
  if (typeof a === 'number') w.int(a);
  else if (typeof a === 'string') w.string(a);
  else w.bytes(a);
}
