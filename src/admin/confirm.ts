// The confirmation step of bulk actions: the first call counts what a filter
// selects and gets a token bound to that filter, that count and a minute; only
// the second call, with the token, acts. Tokens are HMACs under a key derived
// from the admin token, so any sidecar with the same token honours them, and
// nothing is stored.
import { createHmac, timingSafeEqual } from 'node:crypto';

/** How long a confirmation holds. */
export const CONFIRM_MS = 60_000;

export class Confirmations {
  constructor(private readonly key: Buffer) {}

  private mac(what: readonly unknown[], count: number, until: number): string {
    return createHmac('sha256', this.key).update(JSON.stringify([...what, count, until])).digest('base64url');
  }

  /** A token for acting on `count` jobs of the filter `what`. */
  issue(what: readonly unknown[], count: number, now = Date.now()): string {
    const until = now + CONFIRM_MS;
    return `${until}.${count}.${this.mac(what, count, until)}`;
  }

  /** The count the token confirmed for this filter, or null when it is not one of ours, for another filter, or late. */
  check(token: string, what: readonly unknown[], now = Date.now()): number | null {
    const m = /^(\d+)\.(\d+)\.([A-Za-z0-9_-]+)$/.exec(token);
    if (!m) return null;
    const until = Number(m[1]);
    const count = Number(m[2]);
    const expected = Buffer.from(this.mac(what, count, until));
    const given = Buffer.from(m[3]!);
    if (given.length !== expected.length || !timingSafeEqual(given, expected) || now > until) return null;
    return count;
  }
}
