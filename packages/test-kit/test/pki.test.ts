import { execFileSync } from 'node:child_process';
import { X509Certificate } from 'node:crypto';
import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import { requireTool } from '../../../vitest.shared.js';
import { makeCa, makeDeviceCert, makeServerCert, tempDir } from '../src/index.js';

let dir: string;
let cleanup: () => Promise<void>;
beforeEach(async () => ({ dir, cleanup } = await tempDir('test-kit-pki')));
afterEach(() => cleanup());

describe.runIf(requireTool('openssl'))('test PKI', () => {
  it('issues a device certificate the CA verifies, with the contracts §4 identity', () => {
    const ca = makeCa(dir, 'tenant-ca');
    const dev = makeDeviceCert(dir, ca, 'tenant-1', 'gw-1');
    const x = new X509Certificate(dev.certDer);
    expect(x.verify(new X509Certificate(ca.certPem).publicKey)).toBe(true);
    expect(x.subject).toBe('CN=gw-1');
    expect(x.subjectAltName).toBe('URI:spiffe://tenant-1/device/gw-1');
    expect(x.ca).toBe(false);
    expect(new X509Certificate(ca.certPem).ca).toBe(true);
    expect(dev.keyPem).toMatch(/^-----BEGIN PRIVATE KEY-----/);
    expect(execFileSync('openssl', ['verify', '-purpose', 'sslclient', '-CAfile', ca.cert, dev.cert], { cwd: dir }).toString()).toMatch(/OK/);
  });

  it('issues a server certificate for its names', () => {
    const ca = makeCa(dir, 'tls-ca');
    const s = makeServerCert(dir, 'server', ca, ['IP:127.0.0.1', 'DNS:channel.test']);
    expect(new X509Certificate(s.certPem).checkIP('127.0.0.1')).toBe('127.0.0.1');
    expect(new X509Certificate(s.certPem).checkHost('channel.test')).toBe('channel.test');
    expect(execFileSync('openssl', ['verify', '-purpose', 'sslserver', '-CAfile', ca.cert, s.cert], { cwd: dir }).toString()).toMatch(/OK/);
  });
});
