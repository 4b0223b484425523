// Sends a script call already written as RESP bytes (src/store/redis/resp.ts)
// through ioredis, which keeps doing everything else: the link, reconnects,
// Sentinel, the cluster's routing by slot and redirections, timeouts, and
// parsing the reply (Buffers). Redis without the script (restarted, flushed)
// answers NOSCRIPT, having run nothing: the call goes again with EVAL.
import { Command } from 'ioredis';
import type { RedisClient } from './connect.js';
import type { ScriptHeads } from './scripts.js';

class EncodedCommand extends Command {
  constructor(private readonly bytes: Buffer, slot: number | null) {
    super('evalsha');
    // A Redis Cluster routes by slot, which ioredis would read from arguments this command does not keep.
    (this as unknown as { slot: number | null }).slot = slot;
  }

  override toWritable(): Buffer {
    return this.bytes;
  }
}

/** `call` starts with `*<n>\r\n` and heads.evalsha; `slot` is its keys' (null on one Redis). */
export async function sendEncoded(redis: RedisClient, call: Buffer, heads: ScriptHeads, slot: number | null): Promise<unknown> {
  try {
    return await send(redis, call, slot);
  } catch (err) {
    if (!(err instanceof Error) || !err.message.startsWith('NOSCRIPT')) throw err;
    return send(redis, withHead(call, heads), slot);
  }
}

function send(redis: RedisClient, bytes: Buffer, slot: number | null): Promise<unknown> {
  return redis.sendCommand(new EncodedCommand(bytes, slot)) as Promise<unknown>;
}

/** The same call with EVAL and the script's source instead of EVALSHA and its sha (both 2 bulk strings). */
function withHead(call: Buffer, heads: ScriptHeads): Buffer {
  const countEnd = call.indexOf('\r\n') + 2;
  return Buffer.concat([call.subarray(0, countEnd), heads.eval, call.subarray(countEnd + heads.evalsha.length)]);
}
