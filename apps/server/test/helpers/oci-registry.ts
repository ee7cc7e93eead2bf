/**
 * A REAL local OCI registry for tests (Debian's `docker-registry`, distribution 2.8) with
 * filesystem storage in a temp dir on 127.0.0.1 port 0, and pushes through plain OCI
 * distribution API calls.
 */
import { spawn, spawnSync, type ChildProcess } from 'node:child_process';
import { createHash } from 'node:crypto';
import { writeFile } from 'node:fs/promises';
import { join } from 'node:path';
import { expect } from 'vitest';

const REGISTRY_BIN = '/usr/bin/docker-registry';

/** Whether the registry can run here: a loud skip locally, a failure in CI (docs/development.md). */
export function registryAvailable(): boolean {
  const ok = spawnSync(REGISTRY_BIN, ['--version']).status === 0;
  if (!ok) {
    if (process.env.CI === 'true') throw new Error('docker-registry (Debian package docker-registry) is required in CI');
    console.warn('SKIPPING registry tests: install the Debian package "docker-registry"');
  }
  return ok;
}

export const sha = (b: Buffer) => `sha256:${createHash('sha256').update(b).digest('hex')}`;

export async function startRegistry(dir: string): Promise<{ url: string; proc: ChildProcess }> {
  await writeFile(
    join(dir, 'config.yml'),
    `version: 0.1\nlog:\n  level: info\nstorage:\n  filesystem:\n    rootdirectory: ${join(dir, 'data')}\nhttp:\n  addr: 127.0.0.1:0\n  secret: test-only\n`,
  );
  const proc = spawn(REGISTRY_BIN, ['serve', join(dir, 'config.yml')], { stdio: ['ignore', 'pipe', 'pipe'] });
  const url = await new Promise<string>((resolve, reject) => {
    let log = '';
    const timer = setTimeout(() => reject(new Error(`registry did not start: ${log}`)), 15_000);
    const onData = (b: Buffer) => {
      log += b.toString();
      const m = /listening on (127\.0\.0\.1:\d+)/.exec(log);
      if (m) {
        clearTimeout(timer);
        resolve(`http://${m[1]}`);
      }
    };
    proc.stdout.on('data', onData);
    proc.stderr.on('data', onData);
    proc.on('exit', (c) => reject(new Error(`registry exited ${c}: ${log}`)));
  });
  return { url, proc };
}

export async function pushBlob(url: string, repo: string, bytes: Buffer): Promise<string> {
  const digest = sha(bytes);
  const start = await fetch(`${url}/v2/${repo}/blobs/uploads/`, { method: 'POST' });
  expect(start.status).toBe(202);
  const loc = new URL(start.headers.get('location')!, url);
  loc.searchParams.set('digest', digest);
  const put = await fetch(loc, { method: 'PUT', body: bytes, headers: { 'content-type': 'application/octet-stream' } });
  expect(put.status).toBe(201);
  return digest;
}

/** Pushes a one-layer OCI image as `repo:tag`; answers the manifest bytes. */
export async function pushImage(url: string, repo: string, tag: string, layer: Buffer, config: Buffer): Promise<Buffer> {
  const layerDigest = await pushBlob(url, repo, layer);
  const configDigest = await pushBlob(url, repo, config);
  const manifest = Buffer.from(
    JSON.stringify({
      schemaVersion: 2,
      mediaType: 'application/vnd.oci.image.manifest.v1+json',
      config: { mediaType: 'application/vnd.oci.image.config.v1+json', digest: configDigest, size: config.length },
      layers: [{ mediaType: 'application/vnd.oci.image.layer.v1.tar+gzip', digest: layerDigest, size: layer.length }],
    }),
  );
  const put = await fetch(`${url}/v2/${repo}/manifests/${tag}`, {
    method: 'PUT',
    body: manifest,
    headers: { 'content-type': 'application/vnd.oci.image.manifest.v1+json' },
  });
  expect(put.status).toBe(201);
  return manifest;
}
