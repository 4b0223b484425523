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

  constructor(readonly prefix: string, readonly shard = 0, readonly shards = 1) {
    this.tag = `{${prefix}:${shard}}`;
    const t = this.tag;
    this.tubes = `${t}:tubes`;
    this.nodes = `${t}:nodes`;
    this.globals = [`${t}:jobs`, `${t}:bodies`, `${t}:delayed`, `${t}:reserved`, `${t}:stats`, this.tubes, this.nodes, `${t}:seq`];
    this.events = `${t}:events`;
  }

  /** The 5 keys of a tube, in the order scripts expect them. */
  tube(name: string): string[] {
    const base = `${this.tag}:tube:${name}`;
    return [base, `${base}:ready`, `${base}:delayed`, `${base}:buried`, `${base}:refs`];
  }

  /** A sidecar's counters snapshot (see lua/heartbeat.lua). */
  node(id: string): string {
    return `${this.tag}:node:${id}`;
  }
}

/** Tube names a global due/reserved member ends with (pad(id) .. tube). */
export const ID_WIDTH = 16;
