/**
 * The attributes a device reports (docs/inventory.md), as `devices.inventory` stores them
 * (migration 0052): the documented set, the operator's custom attributes from the device's
 * file, and each installed member. A report replaces the stored value as a whole.
 */
export interface InventoryAttributes {
  attributes: Record<string, string>;
  custom: Record<string, string>;
  members: { component: string; version: string; digest: string }[];
}

/** The stored value as read back (`{}` before the first report). */
export function storedInventory(value: unknown): InventoryAttributes {
  const v = (typeof value === 'string' ? JSON.parse(value) : value) as Partial<InventoryAttributes> | null;
  return { attributes: v?.attributes ?? {}, custom: v?.custom ?? {}, members: v?.members ?? [] };
}
