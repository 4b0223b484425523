// Exposure: TLS on the TCP listener, mutual TLS, and --max-connections.
import { execFileSync } from 'node:child_process';
import { mkdtempSync, readFileSync, writeFileSync } from 'node:fs';
import net from 'node:net';
import { tmpdir } from 'node:os';
import path from 'node:path';
import tls from 'node:tls';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { startRedis, type TestRedis } from '../helpers/redis.js';
import { startRedstalk, type TestSidecar } from '../helpers/redstalk.js';

/** A CA, and a server and a client certificate it signed (openssl, in a temp dir). */
function certificates(): Record<'ca' | 'serverCert' | 'serverKey' | 'clientCert' | 'clientKey' | 'otherCert' | 'otherKey', string> {
  const dir = mkdtempSync(path.join(tmpdir(), 'redstalk-tls-'));
  const f = (n: string) => path.join(dir, n);
  const ssl = (...args: string[]) => execFileSync('openssl', args, { cwd: dir, stdio: 'pipe' });
  writeFileSync(f('san.ext'), 'subjectAltName=IP:127.0.0.1\n');
  ssl('req', '-x509', '-newkey', 'rsa:2048', '-nodes', '-keyout', 'ca.key', '-out', 'ca.pem', '-days', '1', '-subj', '/CN=redstalk-test-ca');
  for (const who of ['server', 'client']) {
    ssl('req', '-newkey', 'rsa:2048', '-nodes', '-keyout', `${who}.key`, '-out', `${who}.csr`, '-subj', `/CN=${who}`);
    ssl('x509', '-req', '-in', `${who}.csr`, '-CA', 'ca.pem', '-CAkey', 'ca.key', '-CAcreateserial', '-out', `${who}.pem`, '-days', '1', '-extfile', 'san.ext');
  }
  // A client certificate no CA of ours signed.
  ssl('req', '-x509', '-newkey', 'rsa:2048', '-nodes', '-keyout', 'other.key', '-out', 'other.pem', '-days', '1', '-subj', '/CN=stranger');
  return { ca: f('ca.pem'), serverCert: f('server.pem'), serverKey: f('server.key'), clientCert: f('client.pem'), clientKey: f('client.key'), otherCert: f('other.pem'), otherKey: f('other.key') };
}

/** Sends lines over a TLS connection and returns what came back before `expect` matched (or the error). */
function tlsTalk(port: number, options: tls.ConnectionOptions, send: string, until: RegExp): Promise<string> {
  return new Promise((resolve) => {
    let got = '';
    const s = tls.connect({ port, host: '127.0.0.1', ...options }, () => s.write(send));
    s.on('data', (d) => {
      got += d.toString();
      if (until.test(got)) { s.destroy(); resolve(got); }
    });
    s.on('error', (err) => resolve(`error: ${err.message}`));
    s.on('close', () => resolve(got || 'closed'));
  });
}

describe('TLS and connection limits', () => {
  let redis: TestRedis;
  let certs: ReturnType<typeof certificates>;
  const sidecars: TestSidecar[] = [];
  beforeAll(async () => {
    certs = certificates();
    redis = await startRedis();
  });
  afterAll(async () => {
    for (const s of sidecars) await s.stop();
    await redis?.stop();
  });

  it('serves the protocol over TLS with --tls-cert and --tls-key, and nothing to a plain TCP client', async () => {
    const s = await startRedstalk({ redisUrl: redis.url, shards: 1, tlsCert: certs.serverCert, tlsKey: certs.serverKey }); // real ids over TLS
    sidecars.push(s);
    const reply = await tlsTalk(s.port, { ca: readFileSync(certs.ca) }, 'put 0 0 60 5\r\nhello\r\nreserve\r\n', /hello\r\n$/);
    expect(reply).toBe('INSERTED 1\r\nRESERVED 1 5\r\nhello\r\n');
    const plain = await new Promise<string>((resolve) => {
      let got = '';
      const c = net.connect(s.port, '127.0.0.1', () => c.write('list-tube-used\r\n'));
      c.on('data', (d) => { got += d.toString('latin1'); });
      c.on('close', () => resolve(got));
      c.on('error', () => resolve(got));
    });
    expect(plain).not.toContain('USING');
  });

  it('requires a client certificate signed by --tls-ca (mutual TLS)', async () => {
    const s = await startRedstalk({ redisUrl: redis.url, tlsCert: certs.serverCert, tlsKey: certs.serverKey, tlsCa: certs.ca });
    sidecars.push(s);
    const ca = readFileSync(certs.ca);
    expect(await tlsTalk(s.port, { ca, cert: readFileSync(certs.clientCert), key: readFileSync(certs.clientKey) }, 'list-tube-used\r\n', /\r\n$/))
      .toBe('USING default\r\n');
    expect(await tlsTalk(s.port, { ca }, 'list-tube-used\r\n', /\r\n$/)).not.toContain('USING');
    expect(await tlsTalk(s.port, { ca, cert: readFileSync(certs.otherCert), key: readFileSync(certs.otherKey) }, 'list-tube-used\r\n', /\r\n$/))
      .not.toContain('USING');
  });

  it('refuses TLS settings that do not go together', async () => {
    await expect(startRedstalk({ redisUrl: redis.url, tlsCert: certs.serverCert })).rejects.toThrow(/tlsCert and tlsKey go together/);
    await expect(startRedstalk({ redisUrl: redis.url, tlsCa: certs.ca })).rejects.toThrow(/tlsCa \(client certificates\) needs tlsCert and tlsKey/);
  });

  it('closes connections over --max-connections at once, and takes new ones when others leave', async () => {
    const s = await startRedstalk({ redisUrl: redis.url, maxConnections: 2 });
    sidecars.push(s);
    const open = () => new Promise<net.Socket>((resolve) => { const c = net.connect(s.port, '127.0.0.1', () => resolve(c)); });
    const ask = (c: net.Socket) => new Promise<string>((resolve) => {
      let got = '';
      c.on('data', (d) => { got += d.toString(); if (got.endsWith('\r\n')) resolve(got); });
      c.on('close', () => resolve(got || 'closed'));
      c.write('list-tube-used\r\n');
    });
    const [a, b] = [await open(), await open()];
    expect(await ask(a)).toBe('USING default\r\n');
    expect(await ask(b)).toBe('USING default\r\n');
    const c = await open();
    expect(await ask(c)).toBe('closed');
    a.destroy();
    await new Promise((r) => setTimeout(r, 100));
    const d = await open();
    expect(await ask(d)).toBe('USING default\r\n');
    b.destroy();
    d.destroy();
  });
});
