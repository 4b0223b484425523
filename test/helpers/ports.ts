import net from 'node:net';
import { loopback, waitUntilAccepting } from '../../src/cli/ports.js';

export { freePort } from '../../src/cli/ports.js';

/** Resolves once something accepts TCP connections on 127.0.0.1:port. */
export function waitForPort(port: number, timeoutMs = 10_000): Promise<void> {
  return waitUntilAccepting(loopback(port), `127.0.0.1:${port}`, timeoutMs);
}

/** Resolves once something accepts connections on a UNIX socket. */
export function waitForSocket(path: string, timeoutMs = 10_000): Promise<void> {
  return waitUntilAccepting(() => net.connect(path), path, timeoutMs);
}
