/**
 * Bounds of the server's own answers that no protocol fixes: how much of a list or summary one
 * response carries. Protocol and input limits shared with the agent and CLI are release-core's
 * `LIMITS`.
 */
export const SERVER_LIMITS = Object.freeze({
  /** Events in a rollout's timeline (start, waves, approvals, pauses, abort); the oldest are kept. */
  rolloutTimelineEvents: 500,
  /** Distinct failure reasons listed for one rollout; the most frequent are kept. */
  rolloutFailureReasons: 50,
  /** Devices named under one failure reason (by name); the count covers them all. */
  devicesPerFailureReason: 20,
  /** Bytes of a signed TUF root accepted for an online key rotation (a root of a few keys is under 4 KiB). */
  signedRootBytes: 64 * 1024,
  /** Signatures on such a root (thresholds count distinct keys; more is never needed). */
  signedRootSignatures: 16,
});
