// A storage backend as the sidecar sees it: a job store, a room store, and
// the wake-up events, opened and closed together.
import type { JobStore, ReadyListener, ShardMap } from './job-store.js';
import type { RoomStore } from './room-store.js';

export interface Backend {
  /** The whole data set: each call goes to the shard of its tube or id, or to all of them. */
  readonly jobs: JobStore;
  /**
   * The same data set over a link of its own, for this sidecar's lease
   * (heartbeats, reaping): a call moving a big job on the command link must
   * not hold a renewal back until the sidecar fences itself.
   */
  readonly lease: JobStore;
  /** Each shard's own store (the sidecar batches per shard), and which holds what. */
  readonly shards: readonly JobStore[];
  readonly shardMap: ShardMap;
  readonly rooms: RoomStore;
  /** Connects and starts delivering wake-ups to the listener. */
  open(listener: ReadyListener): Promise<void>;
  /** null when the store's link is up now, else what settles once it is (again). */
  linkWait(): Promise<void> | null;
  /** null when the store answers now (within timeoutMs), else why not. */
  health(timeoutMs: number): Promise<string | null>;
  close(): Promise<void>;
}
