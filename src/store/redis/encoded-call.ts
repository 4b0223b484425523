// Sends a function call already written as RESP bytes (src/store/redis/resp.ts:
// FCALL, the function's name, the key count, keys, arguments) through ioredis,
// which keeps doing everything else: the link, reconnects, Sentinel, the
// cluster's routing by slot and redirections, timeouts, and parsing the reply
// (Buffers). Redis without the function (restarted, flushed, a failover or a
// MOVED to a node that lacks it) answers so, having run nothing: the library
// is loaded again and the same bytes go again (functions.ts sendLoading).
//
// What this relies on from ioredis (pinned by test/unit/encoded-call.test.ts):
// Command is exported and subclassable, the client writes what toWritable()
// returns, and a Redis Cluster routes by getSlot(), which returns the private
// `slot` field when it is set.
import { Command } from 'ioredis';
import type { RedisClient } from './connect.js';
import { sendLoading } from './functions.js';

export class EncodedCommand extends Command {
  constructor(private readonly bytes: Buffer, slot: number | null) {
    super('fcall');
    // A Redis Cluster routes by slot, which ioredis would read from arguments this command does not keep.
    (this as unknown as { slot: number | null }).slot = slot;
  }

  override toWritable(): Buffer {
    return this.bytes;
  }
}

/** `call` is a whole FCALL; `slot` is its keys' (null on one Redis); `reload` loads the library again. */
export function sendEncoded(redis: RedisClient, call: Buffer, slot: number | null, reload: () => Promise<void>): Promise<unknown> {
  return sendLoading(() => redis.sendCommand(new EncodedCommand(call, slot)) as Promise<unknown>, reload);
}
