/** What an A/B update tool reports about its slots (RAUC's `rauc status` subset we rely on). */
export interface SlotStatus {
  compatible: string;
  /** Bootname of the slot the system booted from (A, B). */
  booted: string;
  /** Bootname the bootloader will boot next. */
  primary: string;
}

export interface BundleInfo {
  compatible: string;
  version: string;
  /** Lowercase hex SHA-256 of the bundle's manifest as the update tool inspected it. */
  manifestHash: string;
}

/**
 * One A/B slot updater: the real RAUC driver and a faithful in-memory fake
 * implement it. The tool, not the agent, verifies bundle signature and compatible (spec §2.1 rule 3).
 */
export interface SlotDriver {
  status(): Promise<SlotStatus>;
  inspect(bundle: string): Promise<BundleInfo>;
  /** Installs into the inactive slot and makes it primary. */
  install(bundle: string): Promise<void>;
  /** Marks the booted slot good (commit). */
  markGood(): Promise<void>;
  /** Marks a slot bad and makes the remaining one primary: `booted` falls back, `other` cancels an install. */
  markBad(which: 'booted' | 'other'): Promise<void>;
  /** Asks the device to reboot; returns once requested. */
  reboot(): Promise<void>;
}
