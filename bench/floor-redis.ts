// floor-server.ts's jobs in Redis (bench target `floor-redis`): the least a
// sidecar that keeps every job in Redis must do, done the way redstalk's
// sidecar does it, so that the floor server and its Redis together are the
// least any such sidecar can spend per job:
// - every op of every client that arrives while a call is out goes in the
//   next call, ONE call of one Redis function (batching as src/store/batcher.ts,
//   one call in flight), written as RESP bytes (src/store/redis/resp.ts) and
//   sent through ioredis as the sidecar's are (encoded-call.ts);
// - per job only what a durable job needs (bench/memory.ts' floor scripts):
//   put, an HSET of its body and a ZADD to its tube's ready set (one INCRBY
//   for the ids of a call); reserve, a ZPOPMIN, an HGET and a ZADD to the
//   reserved set; delete, an HDEL and a ZREM;
// - a put that finds a reserve of this server waiting on its tube hands the
//   job over in its call (the RESERVED goes out with the INSERTED), as
//   beanstalkd and redstalk do: at light load a job costs two calls.
// No priorities, delays, TTRs, tube counters or other sidecars; one Redis.
import { Redis } from 'ioredis';
import { EncodedCommand } from '../src/store/redis/encoded-call.js';
import { encoded, RespWriter } from '../src/store/redis/resp.js';
import type { Client, Job, Store } from './floor-server.js';

const KEYS = ['floor:jobs', 'floor:seq', 'floor:reserved'];
const READY = 'floor:ready:';

// ARGV: [1] the call's puts (one INCRBY for their ids), then the ops, two values each in the reply:
//   'p' tube body      put                      -> id, 0
//   'h' tube body      put handed to a reserve  -> id, 0
//                      that waits in the server
//   'r' k tube1..tubek reserve                  -> id, body | 0, '' (none)
//   'd' id             delete                   -> 1 | 0, 0
// A put on a tube that a reserve earlier in the call found empty hands its job to that reserve.
const LIBRARY = `#!lua name=floor
local function ready(tube) return '${READY}' .. tube end
redis.register_function('floor_batch', function(keys, args)
  local jobs, reserved = keys[1], keys[3]
  local puts = tonumber(args[1])
  local id = 0
  if puts > 0 then id = redis.call('INCRBY', keys[2], puts) - puts end
  local out, waiting = {}, {}
  local i, slot, n = 2, 1, #args
  while i <= n do
    local op = args[i]
    if op == 'd' then
      local gone = redis.call('HDEL', jobs, args[i + 1])
      if gone == 1 then redis.call('ZREM', reserved, args[i + 1]) end
      out[slot], out[slot + 1] = gone, 0
      i = i + 2
    elseif op == 'r' then
      local k = tonumber(args[i + 1])
      out[slot], out[slot + 1] = 0, ''
      for t = i + 2, i + 1 + k do
        local top = redis.call('ZPOPMIN', ready(args[t]))
        if top[1] then
          redis.call('ZADD', reserved, 0, top[1])
          out[slot], out[slot + 1] = tonumber(top[1]), redis.call('HGET', jobs, top[1])
          break
        end
      end
      if out[slot] == 0 then
        for t = i + 2, i + 1 + k do
          local w = waiting[args[t]]
          if not w then w = { head = 1 }; waiting[args[t]] = w end
          w[#w + 1] = slot
        end
      end
      i = i + 2 + k
    else
      id = id + 1
      local tube, body = args[i + 1], args[i + 2]
      redis.call('HSET', jobs, id, body)
      local to
      local w = op == 'p' and waiting[tube]
      while w and w[w.head] do
        local s = w[w.head]
        w.head = w.head + 1
        if out[s] == 0 then to = s; break end
      end
      if op == 'h' or to then
        redis.call('ZADD', reserved, 0, id)
        if to then out[to], out[to + 1] = id, body end
      else
        redis.call('ZADD', ready(tube), id, id)
      end
      out[slot], out[slot + 1] = id, 0
      i = i + 3
    end
    slot = slot + 2
  end
  return out
end)`;

const HEAD = encoded('FCALL', 'floor_batch', String(KEYS.length), ...KEYS);
const HEAD_ITEMS = 3 + KEYS.length;

type Op =
  | { code: 'p'; client: Client; tube: string; body: Buffer; waiter: Client | undefined }
  | { code: 'r'; client: Client; tubes: ReadonlySet<string>; mayWait: boolean }
  | { code: 'd'; client: Client; id: number };

export class RedisStore implements Store {
  private queue: Op[] = [];
  private inFlight = false;
  private scheduled = false;
  private readonly writer = new RespWriter();
  /**
   * Tubes a reserve found empty, with no put to ready on them since: a reserve
   * that may wait over such tubes waits without a call (as redstalk's
   * waiters.ts knownDrained), so that at light load a job costs two calls.
   */
  private readonly drained = new Set<string>();

  private constructor(private readonly redis: Redis) {}

  static async open(url: string): Promise<RedisStore> {
    const redis = new Redis(url);
    await redis.call('FUNCTION', 'LOAD', 'REPLACE', LIBRARY);
    return new RedisStore(redis);
  }

  put(client: Client, tube: string, body: Buffer, waiter: Client | undefined): void {
    if (!waiter) this.drained.delete(tube);
    this.add({ code: 'p', client, tube, body, waiter });
  }

  reserve(client: Client, tubes: ReadonlySet<string>, mayWait: boolean): void {
    if (mayWait && this.allDrained(tubes)) return client.reserved(undefined);
    this.add({ code: 'r', client, tubes, mayWait });
  }

  delete(client: Client, id: number): void {
    this.add({ code: 'd', client, id });
  }

  /** Every job is in the jobs hash, the reserved ones also in the reserved set: the rest are ready. */
  stats(client: Client): void {
    this.redis.multi().hlen(KEYS[0]!).zcard(KEYS[2]!).exec().then((replies) => {
      const [all, held] = replies!.map(([err, n]) => { if (err) throw err; return n as number; }) as [number, number];
      client.counted(all - held, held);
    }).catch(fail);
  }

  private add(op: Op): void {
    this.queue.push(op);
    if (!this.inFlight && !this.scheduled) {
      this.scheduled = true;
      setImmediate(this.flush);
    }
  }

  /** Everything queued, in one call. */
  private readonly flush = (): void => {
    this.scheduled = false;
    if (this.inFlight || this.queue.length === 0) return;
    const ops = this.queue;
    this.queue = [];
    const w = this.writer;
    const putsAt = w.placeholder();
    let puts = 0;
    for (const op of ops) {
      if (op.code === 'd') {
        w.ascii('d');
        w.int(op.id);
      } else if (op.code === 'r') {
        w.ascii('r');
        w.int(op.tubes.size);
        for (const t of op.tubes) w.string(t);
      } else {
        w.ascii(op.waiter ? 'h' : 'p');
        w.string(op.tube);
        w.bytes(op.body);
        puts++;
      }
    }
    w.patch(putsAt, puts);
    this.inFlight = true;
    (this.redis.sendCommand(new EncodedCommand(w.command(HEAD, HEAD_ITEMS), null)) as Promise<Array<number | Buffer>>)
      .then((reply) => this.complete(ops, reply), fail);
  };

  private complete(ops: Op[], reply: Array<number | Buffer>): void {
    this.inFlight = false;
    for (let k = 0; k < ops.length; k++) {
      const op = ops[k]!;
      const first = reply[2 * k] as number;
      if (op.code === 'p') {
        op.waiter?.wake({ id: first, body: op.body });
        op.client.inserted(first);
      } else if (op.code === 'd') {
        op.client.deleted(first === 1);
      } else if (first !== 0) {
        op.client.reserved({ id: first, body: reply[2 * k + 1] as Buffer } satisfies Job);
      } else if (!op.mayWait) {
        op.client.reserved(undefined);
      } else if (!this.handOver(op)) {
        for (const t of op.tubes) this.drained.add(t);
        op.client.reserved(undefined);
      }
    }
    // What arrived during the round trip goes now.
    if (this.queue.length) this.flush();
  }

  private allDrained(tubes: ReadonlySet<string>): boolean {
    for (const t of tubes) if (!this.drained.has(t)) return false;
    return true;
  }

  /**
   * A reserve that found nothing takes a put queued since its call left, on a
   * tube it watches (that put chose no waiter: this one was not waiting yet).
   */
  private handOver(reserve: Op & { code: 'r' }): boolean {
    for (const op of this.queue) {
      if (op.code === 'p' && !op.waiter && reserve.tubes.has(op.tube)) {
        op.waiter = reserve.client;
        return true;
      }
    }
    return false;
  }
}

function fail(err: unknown): never {
  process.stderr.write(`floor-redis: ${err instanceof Error ? err.message : String(err)}\n`);
  process.exit(1);
}
