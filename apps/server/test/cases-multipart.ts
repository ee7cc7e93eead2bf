import { randomUUID } from 'node:crypto';

/** A multipart/form-data body of the given parts (text fields and files), in order. */
export function attachmentMultipart(parts: readonly { name: string; filename?: string; type?: string; body: Buffer | string }[]): {
  payload: Buffer;
  contentType: string;
} {
  const boundary = `----svc${randomUUID()}`;
  const chunks: Buffer[] = [];
  for (const p of parts) {
    const disposition = `form-data; name="${p.name}"${p.filename === undefined ? '' : `; filename="${p.filename}"`}`;
    chunks.push(Buffer.from(`--${boundary}\r\nContent-Disposition: ${disposition}\r\n${p.type === undefined ? '' : `Content-Type: ${p.type}\r\n`}\r\n`));
    chunks.push(Buffer.from(p.body));
    chunks.push(Buffer.from('\r\n'));
  }
  chunks.push(Buffer.from(`--${boundary}--\r\n`));
  return { payload: Buffer.concat(chunks), contentType: `multipart/form-data; boundary=${boundary}` };
}
