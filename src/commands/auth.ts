// auth <token> (an extension; off unless a token is configured): until a
// connection has sent the right token, every other command answers
// UNAUTHORIZED; three wrong tokens close it. The comparison takes the same
// time whatever the token, and the token is never logged or shown.
import { createHash, timingSafeEqual } from 'node:crypto';
import { REPLY } from '../protocol/replies.js';
import type { Handlers } from './session.js';

/** Wrong tokens a connection may send before it is closed. */
export const MAX_AUTH_FAILURES = 3;

const digest = (token: string) => createHash('sha256').update(token, 'latin1').digest();

/** Whether `token` is the configured one, in constant time (digests are of equal length). */
export function tokenMatches(expectedDigest: Buffer, token: string): boolean {
  return timingSafeEqual(expectedDigest, digest(token));
}

export { digest as tokenDigest };

export const authHandlers: Handlers<'auth'> = {
  auth(s, [token], svc) {
    if (svc.authenticates(token)) {
      s.authorize();
      return s.answer(REPLY.OK);
    }
    s.answer(REPLY.UNAUTHORIZED);
    if (s.authFailed() >= MAX_AUTH_FAILURES) s.quit();
  },
};
