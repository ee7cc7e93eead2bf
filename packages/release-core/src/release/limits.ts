/** Caps on untrusted release payloads (STYLE 5); README "Limits" explains the numbers. */
export const RELEASE_LIMITS = {
  components: 64,
  profiles: 32,
  probes: 16,
  commandArgs: 32,
  waves: 16,
  approvals: 32,
  attestations: 32,
  /** ten years: longer than any device stays offline and still deserves an update */
  maxOfflineAgeSeconds: 10 * 365 * 24 * 3600,
  /** one hour per probe */
  probeTimeoutSeconds: 3600,
} as const;
