/**
 * Every bound of device tags, the device filter language and bulk actions, in one place
 * (docs/inventory.md, docs/device-filter.md). The inventory's own bounds are shared with the
 * agent and live in release-core's LIMITS.
 */
export const DEVICE_LIMITS = Object.freeze({
  /** Tags on one device. */
  tagsPerDevice: 32,
  /** A filter's length in UTF-16 code units (String length), checked before it is read. */
  filterChars: 2000,
  /** Comparisons in one filter (`a = "x" and b = "y"` is two). */
  filterTerms: 32,
  /** Nesting of parentheses and `not`. */
  filterDepth: 8,
  /** Devices one bulk action may select: a larger selection is refused, naming `filter`. */
  bulkSelection: 10_000,
  /** Devices a bulk action may name one by one (`devices`, the console's ticked rows). */
  bulkNames: 1_000,
  /** Devices a bulk job processes per unit of work (each its own transaction and audit rows). */
  bulkBatch: 100,
} as const);
