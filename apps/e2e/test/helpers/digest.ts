import { createHash } from 'node:crypto';

/** contracts §1: `sha256:` + 64 lowercase hex. */
export function sha(bytes: string | Uint8Array): string {
  return `sha256:${createHash('sha256').update(bytes).digest('hex')}`;
}
