// Every Redis key redstalk uses, built in one place. All keys of a shard
// share the hash tag `{prefix:shard}`, so each script is atomic and
// Cluster-safe. Tubes live in shard 0 today; spreading them over shards is a
// matter of choosing the shard per tube here (job ids already carry it:
// id = seq * shards + shard).

export class Keys {
  readonly tag: string;
  /** The 8 keys every script receives first (lua/includes/common.lua). */
  readonly globals: readonly string[];
  /** Pub/sub channel announcing "<count> <tube>" when jobs become ready. */
  readonly events: string;
  readonly tubes: string;
  readonly nodes: string;
  /** All tubes' delayed jobs and reservations, by due time (the promotion timer reads them). */
  readonly delayed: string;
  readonly reserved: string;

  constructor(readonly prefix: string, readonly shard = 0, readonly shards = 1) {
    this.tag = `{${prefix}:${shard}}`;
    const t = this.tag;
    this.tubes = `${t}:tubes`;
    this.nodes = `${t}:nodes`;
    this.globals = [`${t}:jobs`, `${t}:tube-names`, `${t}:delayed`, `${t}:reserved`, `${t}:stats`, this.tubes, this.nodes, `${t}:seq`];
    this.events = `${t}:events`;
    this.delayed = this.globals[2]!;
    this.reserved = this.globals[3]!;
  }

  private tubeKeys = new Map<string, readonly string[]>();

  /** The 5 keys of a tube, in the order scripts expect them (cached: every batch needs them). */
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

  /** A sidecar's counters snapshot (see lua/heartbeat.lua). */
  node(id: string): string {
    return `${this.tag}:node:${id}`;
  }

  /** The index of waiting rooms (same hash tag, so list-rooms is atomic with room state). */
  get rooms(): string {
    return `${this.tag}:rooms`;
  }

  /** The 7 keys of a waiting room, in the order lua/includes/room.lua expects them (the index first). */
  room(name: string): string[] {
    const base = `${this.tag}:room:${name}`;
    return [this.rooms, base, `${base}:inside`, `${base}:tickets`, `${base}:line`, `${base}:seen`, `${base}:admits`];
  }
}

const MAX_CACHED_TUBES = 10_000;

/**
 * The tube a member of the global delayed/reserved zsets names: members are
 * the id's digit count as one character, the id, then the tube name
 * (lua/includes/common.lua member()).
 */
export function memberTube(member: string): string {
  return member.slice(1 + member.charCodeAt(0) - 48);
}
