// Every job the generator puts carries (producer index, sequence number, send
// time) in its first bytes. The ledger remembers which were INSERTED and how
// often each was reserved, so a run can prove that nothing was lost or handed
// out twice.

/** u32 producer, u32 sequence, f64 intended send time, f64 actual send time (epoch ms). */
export const ID_BYTES = 24;

/** Epoch milliseconds with sub-microsecond resolution, comparable across processes. */
export const clock = (): number => performance.timeOrigin + performance.now();

export function writeJobId(body: Buffer, at: number, producer: number, seq: number, intended: number, sent: number): void {
  body.writeUInt32LE(producer, at);
  body.writeUInt32LE(seq, at + 4);
  body.writeDoubleLE(intended, at + 8);
  body.writeDoubleLE(sent, at + 16);
}

/** When the job was meant to be put: a fixed-rate schedule's slot, else when it was sent. */
export const intendedAt = (body: Buffer, at: number): number => body.readDoubleLE(at + 8);
export const sentAt = (body: Buffer, at: number): number => body.readDoubleLE(at + 16);

/** Per producer, a byte per sequence number, grown by doubling. */
class ByteLog {
  private readonly byProducer = new Map<number, Uint8Array>();

  /** Adds one (saturating at 255) and returns the previous value. */
  bump(producer: number, seq: number): number {
    let log = this.byProducer.get(producer);
    if (!log || seq >= log.length) {
      let size = log?.length ?? 1024;
      while (size <= seq) size *= 2;
      const grown = new Uint8Array(size);
      if (log) grown.set(log);
      this.byProducer.set(producer, (log = grown));
    }
    const before = log[seq]!;
    if (before < 255) log[seq] = before + 1;
    return before;
  }

  get(producer: number, seq: number): number { return this.byProducer.get(producer)?.[seq] ?? 0; }

  producers(): IterableIterator<[number, Uint8Array]> { return this.byProducer.entries(); }
}

export interface LedgerCheck {
  /** Puts answered INSERTED. */
  inserted: number;
  /** Distinct inserted jobs reserved at least once. */
  reserved: number;
  /** Extra reservations of a job already reserved. */
  duplicates: number;
  /** Reserved jobs whose body names no put that was INSERTED (corrupt or foreign). */
  unknown: number;
}

export class Ledger {
  private readonly acked = new ByteLog();
  private readonly seen = new ByteLog();
  private unknownBodies = 0;

  inserted(producer: number, seq: number): void { this.acked.bump(producer, seq); }

  /** Records a reserved body; false for one the generator did not write. */
  reserved(body: Buffer, at: number, bytes: number, payload: number): boolean {
    if (bytes !== payload) {
      this.unknownBodies++;
      return false;
    }
    this.handedOut(body.readUInt32LE(at), body.readUInt32LE(at + 4));
    return true;
  }

  /** Records that a job was handed to a consumer, by its producer and sequence number. */
  handedOut(producer: number, seq: number): void { this.seen.bump(producer, seq); }

  check(): LedgerCheck {
    const result: LedgerCheck = { inserted: 0, reserved: 0, duplicates: 0, unknown: this.unknownBodies };
    for (const [, log] of this.acked.producers()) for (const a of log) result.inserted += a;
    for (const [producer, log] of this.seen.producers()) {
      for (let seq = 0; seq < log.length; seq++) {
        const times = log[seq]!;
        if (times === 0) continue;
        if (this.acked.get(producer, seq) === 0) result.unknown += times;
        else {
          result.reserved++;
          result.duplicates += times - 1;
        }
      }
    }
    return result;
  }
}
