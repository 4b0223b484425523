// A storage backend as the sidecar sees it: a job store, a room store, and
// the wake-up events, opened and closed together.
import type { JobStore, ReadyListener } from './job-store.js';
import type { RoomStore } from './room-store.js';

export interface Backend {
  /** The whole data set, batched and split over shards inside. */
  readonly jobs: JobStore;
  readonly rooms: RoomStore;
  /** Connects and starts delivering wake-ups to the listener. */
  open(listener: ReadyListener): Promise<void>;
  /** null when the store's link is up now, else what settles once it is (again). */
  linkWait(): Promise<void> | null;
  /** null when the store answers now (within timeoutMs), else why not. */
  health(timeoutMs: number): Promise<string | null>;
  close(): Promise<void>;
}
