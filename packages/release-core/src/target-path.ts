/**
 * The consistent-snapshot file name of a TUF target (the TUF specification's "consistent
 * snapshots"): `<dir>/<sha256 hex>.<basename>`, so `app/1.0/app.tar` is served as
 * `app/1.0/<hex>.app.tar`. The tenant repository serves a target's bytes under this name below
 * `targets/`; the device fetches them there after TUF verified the metadata that lists the hash.
 */
export function hashedTargetPath(path: string, sha256Hex: string): string {
  const slash = path.lastIndexOf('/');
  return `${path.slice(0, slash + 1)}${sha256Hex}.${path.slice(slash + 1)}`;
}
