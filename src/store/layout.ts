// Where everything lives in Redis. The data set is split into shards; every
// key of a shard shares one hash tag, so each script touches one slot
// (atomic, and Cluster-safe). A tube and a waiting room live in the shard
// their name hashes to; a job id tells its shard (id = seq * shards + shard,
// lua/jobs/batch.lua). With one shard, everything is in `{prefix:0}`.
import slotOf from 'cluster-key-slot';
import type { ShardMap } from './job-store.js';

/** Redis Cluster's hash slots. */
const SLOTS = 16384;

/**
 * The hash tag of shard `shard` of `shards`: `{prefix:shard}`, or if that
 * tag's slot is not in the shard's own 1/shards of the slot space, the first
 * `{prefix:shard.k}` whose slot is. A cluster whose primaries own equal runs
 * of slots (what `redis-cli --cluster create` makes) then holds the same
 * number of shards on each primary, instead of what 12 random slots give.
 */
export function shardTag(prefix: string, shard: number, shards: number): string {
  const from = Math.floor((shard * SLOTS) / shards);
  const to = Math.floor(((shard + 1) * SLOTS) / shards);
  for (let k = 0; ; k++) {
    const tag = k === 0 ? `${prefix}:${shard}` : `${prefix}:${shard}.${k}`;
    const slot = slotOf(tag);
    if (shards === 1 || (slot >= from && slot < to)) return `{${tag}}`;
  }
}

export class Layout {
  private readonly shardKeys: ShardKeys[];
  /** Where the shard count of the data set is recorded: the same key whatever the count. */
  readonly shardCountKey: string;
  /** The job sequence of a one-shard data set (one written before the count was recorded has one shard). */
  readonly oneShardSeqKey: string;
  /** Which shard holds what, as the sharded store routes by it. */
  readonly map: ShardMap;

  constructor(readonly prefix: string, readonly shards = 1) {
    if (!Number.isInteger(shards) || shards < 1 || shards > MAX_SHARDS) throw new RangeError(`shards must be an integer from 1 to ${MAX_SHARDS}, not ${shards}`);
    this.shardKeys = Array.from({ length: shards }, (_, i) => new ShardKeys(shardTag(prefix, i, shards), i, shards));
    this.shardCountKey = `{${prefix}:0}:shards`;
    this.oneShardSeqKey = `{${prefix}:0}:seq`;
    this.map = { count: shards, ofTube: (name) => this.shardOf(name), ofId: (id) => this.shardOfId(id) };
  }

  /** The shard of a tube (or a waiting room): a stable hash of its name. */
  shardOf(name: string): number {
    return this.shards === 1 ? 0 : fnv1a(name) % this.shards;
  }

  /** The shard a job id was made in. */
  shardOfId(id: string): number {
    return this.shards === 1 ? 0 : Number(BigInt(id) % BigInt(this.shards));
  }

  keys(shard: number): ShardKeys {
    const keys = this.shardKeys[shard];
    if (!keys) throw new RangeError(`no shard ${shard} of ${this.shards}`);
    return keys;
  }
}

/** 32-bit FNV-1a over the name's UTF-16 code units: the same on every sidecar, cheap, well spread. */
function fnv1a(s: string): number {
  let h = 0x811c9dc5;
  for (let i = 0; i < s.length; i++) {
    h ^= s.charCodeAt(i);
    h = Math.imul(h, 0x01000193);
  }
  return h >>> 0;
}

/** The keys of one shard, in the orders the Lua scripts expect them. */
export class ShardKeys {
  readonly tag: string;
  /** The 10 keys every job script receives first (lua/includes/jobs.lua). */
  readonly globals: readonly string[];
  /** Pub/sub channel announcing "<count> <tube>" when jobs become ready. */
  readonly events: string;
  /** The tubes that exist, in list-tubes order (zset, score = position). */
  readonly tubes: string;
  readonly nodes: string;
  /** All tubes' delayed jobs and reservations, by due time (the promotion timer reads them). */
  readonly delayed: string;
  readonly reserved: string;
  /** put-with jobs not reserved yet, by when they expire (lua/includes/jobs.lua derives it too). */
  readonly expiring: string;
  /** Counters: total-jobs, job-timeouts, and the jobs of all tubes by state. */
  readonly stats: string;
  /** The tubes that have ready jobs. */
  readonly readyTubes: string;
  /** The index of waiting rooms. */
  readonly rooms: string;
  /** Bodies kept apart from their job records (large ones: lua/includes/jobs.lua BODY_APART). */
  readonly bodies: string;
  /** A key that never exists, in the shard's slot: a call that looks it up learns whether the node serves the slot whole. */
  readonly slotProbe: string;
  /** The dashboard's samples of the last hour (lua/jobs/history.lua; shard 0's only). */
  readonly history: string;
  private tubeKeys = new Map<string, readonly string[]>();

  constructor(tag: string, readonly shard: number, readonly shards: number) {
    const t = tag;
    this.tag = t;
    this.tubes = `${t}:tube-order`;
    this.nodes = `${t}:nodes`;
    this.delayed = `${t}:delayed`;
    this.reserved = `${t}:reserved`;
    this.expiring = `${t}:expiring`;
    this.stats = `${t}:stats`;
    this.readyTubes = `${t}:ready-tubes`;
    this.bodies = `${t}:bodies`;
    this.slotProbe = `${t}:slot-probe`;
    this.globals = [`${t}:jobs`, `${t}:tube-names`, this.delayed, this.reserved, this.stats, this.tubes, this.nodes, `${t}:seq`, this.readyTubes, this.bodies];
    this.events = `${t}:events`;
    this.rooms = `${t}:rooms`;
    this.history = `${t}:history`;
  }

  /** The 5 keys of a tube, in the order job scripts expect them (cached: every batch needs them). */
  tube(name: string): readonly string[] {
    let keys = this.tubeKeys.get(name);
    if (keys) return keys;
    // Tube names come from clients: bound the cache rather than let it grow.
    if (this.tubeKeys.size >= MAX_CACHED_TUBES) this.tubeKeys = new Map();
    const base = `${this.tag}:tube:${name}`;
    keys = [base, `${base}:ready`, `${base}:delayed`, `${base}:buried`, `${base}:refs`];
    this.tubeKeys.set(name, keys);
    return keys;
  }

  /** A sidecar's counters snapshot (lua/jobs/heartbeat.lua). */
  node(id: string): string {
    return `${this.tag}:node:${id}`;
  }

  /** What a sidecar with --http says of itself for the dashboard (version, batch sizes), expiring with it. */
  nodeInfo(id: string): string {
    return `${this.tag}:node-info:${id}`;
  }

  /** A connection's stored watch list (owner "<node>:<connection>"; lua/jobs/batch.lua 's'). */
  watchList(owner: string): string {
    return `${this.tag}:watch:${owner}`;
  }

  /** The owners of a sidecar's stored watch lists in this shard (lua/jobs/forgetNode.lua deletes them). */
  watchLists(node: string): string {
    return `${this.tag}:watch-lists:${node}`;
  }

  /** The 7 keys of a waiting room, in the order lua/includes/room.lua expects them (the index first). */
  room(name: string): string[] {
    const base = `${this.tag}:room:${name}`;
    return [this.rooms, base, `${base}:inside`, `${base}:tickets`, `${base}:line`, `${base}:seen`, `${base}:admits`];
  }
}

const MAX_CACHED_TUBES = 10_000;
/** The most shards a data set may have (--shards). */
export const MAX_SHARDS = 256;

/**
 * The tube a member of the global delayed/reserved zsets names: members are
 * the id's digit count as one character, the id, then the tube name
 * (lua/includes/jobs.lua member()).
 */
/** The job id of such a member. */
export function memberId(member: string): string {
  return member.slice(1, 1 + member.charCodeAt(0) - 48);
}

export function memberTube(member: string): string {
  return member.slice(1 + member.charCodeAt(0) - 48);
}
