import net from 'node:net';

/** A TCP port on 127.0.0.1 that was free a moment ago (the OS picked it). */
export function freePort(): Promise<number> {
  return new Promise((resolve, reject) => {
    const srv = net.createServer();
    srv.unref();
    srv.on('error', reject);
    srv.listen(0, '127.0.0.1', () => {
      const { port } = srv.address() as net.AddressInfo;
      srv.close(() => resolve(port));
    });
  });
}

/** Resolves once something accepts TCP connections on 127.0.0.1:port. */
export function waitForPort(port: number, timeoutMs = 10_000): Promise<void> {
  return waitUntilAccepting(() => net.connect(port, '127.0.0.1'), `127.0.0.1:${port}`, timeoutMs);
}

/** Resolves once something accepts connections on a UNIX socket. */
export function waitForSocket(path: string, timeoutMs = 10_000): Promise<void> {
  return waitUntilAccepting(() => net.connect(path), path, timeoutMs);
}

async function waitUntilAccepting(connect: () => net.Socket, what: string, timeoutMs: number): Promise<void> {
  const until = Date.now() + timeoutMs;
  for (;;) {
    const ok = await new Promise<boolean>((resolve) => {
      const s = connect();
      s.once('connect', () => { s.destroy(); resolve(true); });
      s.once('error', () => resolve(false));
    });
    if (ok) return;
    if (Date.now() > until) throw new Error(`nothing listens on ${what}`);
    await new Promise((r) => setTimeout(r, 20));
  }
}
