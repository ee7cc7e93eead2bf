import { SigningRepoError } from './errors.js';
import { SERVER_LIMITS } from '../limits.js';

const SEGMENT_RE = /^[A-Za-z0-9_+-][A-Za-z0-9._+-]{0,127}$/;
const HASHED_NAME_RE = /^([0-9a-f]{64})\.(.+)$/;

/**
 * A target path is a relative, slash-separated path of plain segments. It ends up
 * in URLs (`/tuf/<tenant>/targets/<dir>/<sha256>.<base>`) and in device file
 * names, so it is kept to a conservative alphabet: no `..`, no empty segments,
 * no leading dot (hidden files), at most 512 characters.
 */
export function assertTargetPath(path: unknown, field = 'path'): string {
  if (typeof path !== 'string' || path.length === 0 || path.length > SERVER_LIMITS.targetPathChars) {
    throw new SigningRepoError('TARGET_PATH_INVALID', `${field} must be a string of 1 to ${SERVER_LIMITS.targetPathChars} characters`);
  }
  for (const segment of path.split('/')) {
    if (!SEGMENT_RE.test(segment)) {
      throw new SigningRepoError(
        'TARGET_PATH_INVALID',
        `${field} must be relative segments of letters, digits, ".", "_", "+", "-" (not starting with "."), got ${JSON.stringify(path)}`,
      );
    }
  }
  return path;
}

/** Inverse of release-core's hashedTargetPath; undefined when the name carries no hash prefix. */
export function splitHashedTargetPath(hashedPath: string): { path: string; sha256Hex: string } | undefined {
  const slash = hashedPath.lastIndexOf('/');
  const dir = slash < 0 ? '' : hashedPath.slice(0, slash + 1);
  const m = HASHED_NAME_RE.exec(hashedPath.slice(slash + 1));
  if (!m) return undefined;
  return { path: `${dir}${m[2]}`, sha256Hex: m[1] as string };
}
