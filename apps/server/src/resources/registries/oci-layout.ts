/**
 * An image (one manifest, its config and layer blobs) as an OCI image-layout tar (image-spec
 * "image-layout": oci-layout, index.json, blobs/sha256/...), streamed: blobs are fetched one at
 * a time through the client, which verifies each digest and size on the way.
 */
import { PassThrough } from 'node:stream';
import { pack as tarPack } from 'tar-stream';
import { blobStream, type Descriptor, type RegistryTarget } from './oci-client.js';

export const OCI_LAYOUT_TAR = 'application/vnd.oci.image.layout.v1+tar';

export function ociLayoutTar(
  t: RegistryTarget,
  repo: string,
  tag: string,
  m: { bytes: Buffer; digest: string; mediaType: string; config: Descriptor; layers: Descriptor[] },
): PassThrough {
  const pack = tarPack();
  const out = new PassThrough();
  pack.on('error', (e) => out.destroy(e));
  pack.pipe(out);
  const mtime = new Date(0); // deterministic archive bytes for the same image
  const small = (name: string, bytes: Buffer) =>
    new Promise<void>((res, rej) => pack.entry({ name, size: bytes.length, mtime }, bytes, (e) => (e ? rej(e) : res())));
  void (async () => {
    try {
      await small('oci-layout', Buffer.from('{"imageLayoutVersion":"1.0.0"}'));
      const index = {
        schemaVersion: 2,
        manifests: [{ mediaType: m.mediaType, digest: m.digest, size: m.bytes.length, annotations: { 'org.opencontainers.image.ref.name': tag } }],
      };
      await small('index.json', Buffer.from(JSON.stringify(index)));
      await small(`blobs/sha256/${m.digest.slice(7)}`, m.bytes);
      const seen = new Set<string>();
      for (const d of [m.config, ...m.layers]) {
        if (seen.has(d.digest)) continue;
        seen.add(d.digest);
        await new Promise<void>((res, rej) => {
          const entry = pack.entry({ name: `blobs/sha256/${d.digest.slice(7)}`, size: d.size, mtime }, (e) => (e ? rej(e) : res()));
          void (async () => {
            try {
              for await (const chunk of blobStream(t, repo, d)) if (!entry.write(chunk)) await new Promise<void>((r) => entry.once('drain', () => r()));
              entry.end(undefined);
            } catch (e) {
              entry.destroy(e as Error);
              rej(e instanceof Error ? e : new Error(String(e)));
            }
          })();
        });
      }
      pack.finalize();
    } catch (e) {
      out.destroy(e as Error);
    }
  })();
  return out;
}
