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
  /**
   * Delta updates (docs/delta-updates.md). Source versions one member of a rollout gets deltas
   * from: the most common among its devices; the others download the full member.
   */
  deltaSourcesPerMember: 4,
  /** Deltas one rollout asks for over all its members. */
  deltaSourcesPerRelease: 16,
  /** One delta build (zstd making the delta, then applying it once to check it), wall time. */
  deltaBuildTimeoutMs: 120_000,
  /**
   * Peak resident memory of one build's zstd process; over it the build is stopped and failed.
   * Measured 205 MiB for a 64 MiB member at level 3 (window 2^26), about 400 MiB at the 128 MiB
   * cap (window 2^27): the cap leaves room for the largest member a delta is made for.
   */
  deltaBuildMemoryBytes: 768 * 1024 * 1024,
  /** A build whose process died or hung is leased again this many times in all. */
  deltaBuildAttempts: 3,
  /** A delta larger than this share of its full member is not worth sending (skipped). */
  deltaMaxRatio: 0.5,
  /** Deltas one delta-build pass makes at most before yielding to the next interval. */
  deltaBuildsPerPass: 8,
  /**
   * How long a delta no running rollout uses is kept (from its last build or reuse) before the
   * collector retires it; a delta whose source or target member is no longer stored goes at
   * once. A later rollout between the same versions builds it again.
   */
  deltaRetireAfterMs: 24 * 60 * 60 * 1000,
  /** Delta rows the collector reads per page. */
  deltaGcBatch: 200,
  /**
   * The bundle port (docs/delta-updates.md "OS bundles: RAUC streaming"). Connections held at
   * once; RAUC keeps one open per streaming install.
   */
  bundleConnections: 1000,
  /** A bundle connection that sends no complete request, or stalls a response, this long is closed. */
  bundleIdleMs: 60_000,
  /** Request head bytes accepted on the bundle port (a GET with a Range header is far below). */
  bundleHeaderBytes: 8 * 1024,
  /** Bytes of a bundle response counted between two writes of the per-device counter. */
  bundleCountEveryBytes: 16 * 1024 * 1024,
  /** Bytes of a signed TUF root accepted for an online key rotation (a root of a few keys is under 4 KiB). */
  signedRootBytes: 64 * 1024,
  /** Signatures on such a root (thresholds count distinct keys; more is never needed). */
  signedRootSignatures: 16,
});

/**
 * How the server process stops on SIGTERM or SIGINT (docs/server.md "Stopping"). The ports stop
 * accepting at once; calls and requests under way get `shutdownGraceMs` to finish, then the
 * device channel's HTTP/2 sessions and the HTTP connections still open are cut and the jobs
 * still running are left to their transactions; closing what is left (the last-seen flush, the
 * database pool) gets `shutdownCloseMs`. Past both the process exits whatever still waits
 * (status 1, the step named in the log): work not committed by then is rolled back by the
 * database, never half written.
 */
export const SERVER_TUNING = Object.freeze({
  shutdownGraceMs: 10_000,
  shutdownCloseMs: 10_000,
});
