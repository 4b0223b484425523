// Who may change anything through the admin API. Reads are open (the
// endpoint listens on loopback unless told otherwise); a change needs the
// admin token in `Authorization: Bearer`, which a browser never sends on its
// own (no cookie is ever honoured, so a page elsewhere cannot ride on a
// session), and is refused outright when it comes from another origin.
import type http from 'node:http';
import { isIP } from 'node:net';
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

/** Paths a page could read that the host check covers (the probes and /metrics stay open to any name). */
const GUARDED = /^\/(?:$|api\/|assets\/)/;

/**
 * Refuses the admin API and the dashboard under a host name that is not an
 * IP address, localhost or one of `names` (`*`: any): a page of some other
 * site whose name was made to point at this address (DNS rebinding) would
 * otherwise read job bodies as if it were this origin.
 */
export function hostCheck(names: readonly string[]): { handle(req: http.IncomingMessage, res: http.ServerResponse): boolean } {
  const any = names.includes('*');
  const known = new Set(names.map((n) => n.toLowerCase()));
  return {
    handle(req, res) {
      if (any || !GUARDED.test((req.url ?? '/').split('?')[0]!)) return false;
      const host = (req.headers.host ?? '').toLowerCase().replace(/:\d+$/, '').replace(/^\[(.*)\]$/, '$1');
      if (isIP(host) !== 0 || host === 'localhost' || host.endsWith('.localhost') || known.has(host)) return false;
      res.writeHead(403, { 'content-type': 'text/plain; charset=utf-8', 'cache-control': 'no-store' });
      res.end(`host ${host || '(none)'} refused: add it to --http-hosts to serve the admin API and dashboard under that name\n`);
      return true;
    },
  };
}
