// Who may change anything through the admin API. Reads are open (the
// endpoint listens on loopback unless told otherwise); a change needs the
// admin token in `Authorization: Bearer`, which a browser never sends on its
// own (no cookie is ever honoured, so a page elsewhere cannot ride on a
// session), and is refused outright when it comes from another origin.
import type http from 'node:http';
import { tokenMatches } from '../commands/auth.js';
import { AdminError } from '../admin/errors.js';

/** Refuses a change the request may not make; `digest`: the admin token's, or null (read-only). */
export function allowChange(req: http.IncomingMessage, digest: Buffer | null): void {
  const origin = req.headers.origin;
  if (origin !== undefined && !sameOrigin(origin, req.headers.host)) throw new AdminError(403, `cross-origin change refused (origin ${origin})`);
  if (req.headers['sec-fetch-site'] === 'cross-site') throw new AdminError(403, 'cross-site change refused');
  if (digest === null) throw new AdminError(403, 'read-only: start the sidecar with --http-admin-token (or --auth-token) to allow changes');
  const m = /^Bearer (\S+)$/.exec(req.headers.authorization ?? '');
  if (!m || !tokenMatches(digest, m[1]!)) throw new AdminError(401, 'a change needs the admin token: Authorization: Bearer <token>');
}

function sameOrigin(origin: string, host: string | undefined): boolean {
  try {
    return host !== undefined && new URL(origin).host === host;
  } catch {
    return false;
  }
}
