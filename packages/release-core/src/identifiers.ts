/*
 * The identifiers every package checks the same way: the server (API paths, enrollment, the
 * device channel), the agent (its settings and device name), the CLI and the documents
 * release-core validates. vectors/identifiers.json lists valid and invalid examples.
 */

const UUID = /^[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}$/;
const UUID_ANY_CASE = new RegExp(UUID.source, 'i');
/** contracts §4 */
const NAME = /^[a-z0-9][a-z0-9._-]{0,62}$/;

export const IDENTIFIER_PATTERNS = Object.freeze({
  /** A UUID in its canonical text form: lowercase, hyphenated (RFC 9562 section 4). */
  uuid: UUID,
  /** contracts §4: device names, the CN and SAN of a device certificate. */
  deviceName: NAME,
  /** contracts §4: artifact names use the device-name pattern. */
  artifactName: NAME,
  /** Component names of a release: the artifact-name pattern (README "Release payload shapes"). */
  componentName: NAME,
  /** contracts §2: product IDs. */
  product: /^[a-z0-9][a-z0-9._-]{0,63}$/,
  /** Compatibility profiles (`linux-arm64`): the product-ID pattern. */
  profile: /^[a-z0-9][a-z0-9._-]{0,63}$/,
  /** contracts §4: artifact versions; release versions use the same pattern. */
  version: /^[0-9A-Za-z][0-9A-Za-z.+_-]{0,63}$/,
  /**
   * An id one document gives another by reference: artifact, group, rollout and transaction
   * ids. The server writes UUIDs; the pattern also admits the ids of other registries.
   */
  id: /^[A-Za-z0-9][A-Za-z0-9._:-]{0,127}$/,
  /**
   * An inventory attribute's key (reported or custom, docs/inventory.md): lowercase, no dot,
   * so `attributes.<key>` and `custom.<key>` in a device filter name exactly one attribute.
   */
  inventoryKey: /^[a-z][a-z0-9_]{0,62}$/,
  /** An operator's device tag (`eu`, `line:3`, `pilot-2026`). */
  deviceTag: /^[a-z0-9][a-z0-9._:-]{0,62}$/,
  /** An artifact's media type (`application/vnd.rauc`): RFC 6838 type/subtype, lowercase, no parameters. */
  mediaType: /^[a-z0-9][a-z0-9!#$&^_.+-]{0,63}\/[a-z0-9][a-z0-9!#$&^_.+-]{0,126}$/,
} as const);

/**
 * A UUID exactly as this system writes it: lowercase canonical form. Signed documents and
 * certificates (a payload's `tenant`, the tenant in a SAN URI) are compared byte for byte, so
 * an upper-case UUID there is not the same tenant and is refused.
 */
export function isUuid(value: unknown): value is string {
  return typeof value === 'string' && UUID.test(value);
}

/**
 * A UUID typed by a person (a setting, an id in a URL path) in either case, as its canonical
 * lowercase form; undefined when it is not a UUID. RFC 9562 section 4 has UUIDs compared
 * case-insensitively on input and written in lowercase: normalize at the edge, then compare
 * with `isUuid` rules everywhere else.
 */
export function normalizeUuid(value: unknown): string | undefined {
  return typeof value === 'string' && UUID_ANY_CASE.test(value) ? value.toLowerCase() : undefined;
}

export function isDeviceName(value: unknown): value is string {
  return typeof value === 'string' && NAME.test(value);
}
