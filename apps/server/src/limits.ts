/**
 * Every cap and knob of the server, in one place, in two objects:
 *
 * - `SERVER_LIMITS`: what the server accepts and answers. Each bound is part of the API's
 *   contract: a request over it is refused with a 4xx naming the field, a response is cut at it
 *   (and says so). Changing one changes what clients may send or will see.
 * - `SERVER_TUNING`: how the server does its work (batch sizes, caches, time-outs, retries,
 *   memory per transfer). Changing one changes speed or memory, never what a request may
 *   contain or what an answer means.
 *
 * Protocol and input limits shared with the agent and the CLI are release-core's `LIMITS`.
 * Both objects are frozen, nested groups included; nothing mutates them at run time (a server
 * that needs other values takes them as options, as `AppContext.evidence.attachmentLimits`).
 */

const KiB = 1024;
const MiB = 1024 * KiB;
const GiB = 1024 * MiB;

export const SERVER_LIMITS = Object.freeze({
  // --- HTTP requests ---------------------------------------------------------------------

  /**
   * Bytes of a JSON request body, on every route that does not set its own (uploads do). The
   * largest JSON documents a client sends (a policy, a branding with its logo) are well under.
   */
  requestBodyBytes: 1 * MiB,
  /**
   * Characters of one path parameter (`:id`, `:name`): identifiers in paths are UUIDs and
   * short names, far below; the router refuses longer ones with 414 (the `*` wildcard has none).
   */
  pathParamChars: 100,
  /** spec §8: the page size of a list when the query names none. */
  pageLimitDefault: 50,
  /** spec §8: the largest page of a list; a larger `limit` is clamped to it. */
  pageLimit: 200,
  /** The largest `offset` (2^31 - 1): far beyond any list, and exact in every driver and in JSON. */
  pageOffset: 2_147_483_647,

  // --- documents and identifiers -----------------------------------------------------------

  /**
   * Arrays and objects a document may nest: the schema validator and the readers recurse, and
   * about a thousand levels of CycloneDX `components` exhaust the stack. Real documents nest
   * a few levels (a CycloneDX component tree about 2 per level).
   */
  documentDepth: 128,
  /**
   * Bytes of one identifier a document adds to an index (package URL, package key,
   * vulnerability id or alias): a PostgreSQL btree entry holds at most 2704 bytes, and no
   * real identifier comes near this.
   */
  identifierBytes: 1024,
  /**
   * Nesting of a KEV catalog posted as JSON, checked before it is read: the real catalog nests
   * a few levels, so 32 refuses only documents built to exhaust the stack.
   */
  kevDepth: 32,

  // --- accounts, keys and branding ---------------------------------------------------------

  /** Bytes of a password: scrypt's work grows with its input, and no passphrase needs more. */
  passwordBytes: 1024,
  /**
   * Characters of an authorizer key's SPKI PEM: a P-256 or Ed25519 key is under 200, an RSA
   * 4096 key about 800; 4096 leaves room and refuses pasted documents.
   */
  authorizerKeyPemChars: 4096,
  /** Characters of the logo data URL: it is stored in the database and embedded in every report. */
  logoDataUrlChars: 256 * KiB,

  // --- enrollment and the device channel ---------------------------------------------------

  /** Bytes of a CSR: one of ours (P-256, one CN) is a few hundred; anything much larger is not one. */
  csrBytes: 4096,
  /** Characters of an enrollment token sent by a device: ours are 57 (`svce_`, 8 hex digits, 43 base64url characters); longer is not a token. */
  enrollTokenChars: 256,
  /** Characters of the agent version and profile an agent reports at enrollment (an identifier, not prose). */
  inventoryFieldChars: 64,
  /** The longest life an operator may give an enrollment token: it is a bearer secret, keep it short-lived (90 days). */
  enrollTokenTtlSeconds: 90 * 24 * 3600,
  /** Uses an operator may give one enrollment token: a production line's batch, not an unbounded key. */
  enrollTokenUses: 100_000,

  // --- groups, rollouts and their answers --------------------------------------------------

  /** Member names in one group's response (`member_count` stays exact): a page of JSON a browser still renders. */
  groupMembersShown: 10_000,
  /** Devices one add/remove call names: one statement each way, a body well under `requestBodyBytes`. */
  groupMembersPerCall: 10_000,
  /** Devices named in a refusal for incompatible profiles ("and more" beyond): an error message, not a report. */
  incompatibleDevicesShown: 5,
  /** Events in a rollout's timeline (start, waves, approvals, pauses, abort); the oldest are kept. */
  rolloutTimelineEvents: 500,
  /** Distinct failure reasons listed for one rollout; the most frequent are kept. */
  rolloutFailureReasons: 50,
  /** Devices named under one failure reason (by name); the count covers them all. */
  devicesPerFailureReason: 20,

  // --- artifacts and the signing repository ------------------------------------------------

  /**
   * Bytes of one uploaded artifact file when the server is given no other cap
   * (`PublishingDeps.maxArtifactBytes`): the largest OS images in use are a few GiB.
   */
  artifactBytes: 4 * GiB,
  /** Characters of a TUF target path: segments of at most 128, a few deep. */
  targetPathChars: 512,
  /** Targets one publish names: one transaction and one new targets metadata for all of them. */
  targetsPerPublish: 1000,
  /** Bytes of a target's `custom` JSON: it is copied into the targets metadata every device downloads. */
  targetCustomBytes: 16 * KiB,
  /** Bytes of a signed TUF root accepted for an online key rotation (a root of a few keys is under 4 KiB). */
  signedRootBytes: 64 * KiB,
  /** Signatures on such a root (thresholds count distinct keys; more is never needed). */
  signedRootSignatures: 16,
  /** Request head bytes accepted on the bundle port (a GET with a Range header is far below). */
  bundleHeaderBytes: 8 * KiB,

  // --- outside services the server reads from ----------------------------------------------

  /** Bytes of an OCI image manifest read from a registry (real ones are a few KiB; the OCI distribution spec has registries accept at least 4 MiB). */
  ociManifestBytes: 4 * MiB,
  /** Bytes of a registry's tag list read at once. */
  ociTagListBytes: 4 * MiB,
  /** Bytes of a case-submission endpoint's answer kept: enough for its reference and an error text. */
  caseSubmissionResponseBytes: 64 * KiB,

  /** Case fields (docs/article-14.md "Limits"). */
  cases: Object.freeze({
    products: 32,
    artifacts: 256,
    vulnerabilities: 64,
    devices: 1000,
    groups: 64,
    /** Characters of a title, an owner, a person's name. */
    shortText: 200,
    /** Characters of a summary, a rationale, an evidence or a reason. */
    longText: 20_000,
  }),

  /** Case evidence exports (docs/article-14.md "Limits"). */
  caseExports: Object.freeze({
    /** Receipts in one archive. */
    receipts: 100_000,
    /** Linked findings in `findings/findings-and-exposure.json` (`findings_total` counts them all). */
    findings: 10_000,
    /** Affected devices listed there (`affected.devices_total` counts them all). */
    exposedDevices: 10_000,
    /** Audit events and receipt index lines per JSON Lines file. */
    linesPerFile: 1000,
  }),

  /**
   * Case attachments (docs/article-14.md "Limits"): the defaults a server may lower or raise
   * through `AppContext.evidence.attachmentLimits` (resources/case-attachments/limits.ts merges them).
   */
  attachments: Object.freeze({
    /** Bytes of one file. */
    fileBytes: 25 * MiB,
    /** Attachments of one case, redacted ones not counted. */
    filesPerCase: 50,
    /** Bytes of all of a case's attachments, redacted ones not counted. */
    caseBytes: 250 * MiB,
    /** Characters of a stored file name (longer names are shortened, keeping the extension). */
    filenameChars: 200,
    /** Characters of a description. */
    descriptionChars: 2000,
  }),

  /**
   * Device tags, the device filter language and bulk actions (docs/inventory.md,
   * docs/device-filter.md). The inventory's own bounds are shared with the agent and live in
   * release-core's LIMITS.
   */
  devices: Object.freeze({
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
  }),

  /**
   * An imported vulnerability feed (docs/vulnerabilities.md "Limits"). Archive caps are checked
   * before anything is written (a 400); a record over its cap is skipped and counted.
   */
  feeds: Object.freeze({
    /** bytes of one uploaded OSV archive (zip, tar or tar.gz) */
    maxArchiveBytes: 1 * GiB,
    /** entries of one archive */
    maxEntries: 1_000_000,
    /** uncompressed bytes of all record entries together */
    maxExpandedBytes: 8 * GiB,
    /** uncompressed / compressed size of one zip entry, and of a whole tar.gz (zip bombs) */
    maxCompressionRatio: 200,
    /** uncompressed bytes of one OSV record (larger: skipped, counted) */
    maxRecordBytes: 8 * MiB,
    /** `affected[]` entries of one record, and `versions[]` of one entry (larger: skipped) */
    maxAffected: 10_000,
    maxVersions: 100_000,
    /** bytes of a CISA KEV catalog (the real one is about 1.5 MB) */
    maxKevBytes: 64 * MiB,
    /** skipped records whose reason the import keeps (all are counted) */
    keptSkipReasons: 100,
  }),

  /** An attached SBOM (docs/vulnerabilities.md "Limits"). */
  sboms: Object.freeze({
    /** bytes of one document */
    maxBytes: 16 * MiB,
    /** components (CycloneDX, nested included) or packages (SPDX) of one document */
    maxComponents: 20_000,
  }),

  /** An uploaded VEX document (docs/vulnerabilities.md "Limits"). */
  vex: Object.freeze({
    /** bytes of one document */
    maxBytes: 8 * MiB,
    /** statements of one document */
    maxStatements: 10_000,
  }),

  /** A VEX export: the statement history read for one product (more: 400 naming the product). */
  vexExport: Object.freeze({
    maxStatements: 200_000,
  }),
});

export const SERVER_TUNING = Object.freeze({
  // --- delta updates (docs/delta-updates.md) -----------------------------------------------

  /** Source versions one member of a rollout gets deltas from: the most common among its devices; the others download the full member. */
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
  deltaBuildMemoryBytes: 768 * MiB,
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
  /** How often each server process runs the delta collector. */
  deltaGcIntervalMs: 10 * 60_000,

  // --- the bundle port (docs/delta-updates.md "OS bundles: RAUC streaming") ----------------

  /** Connections held at once; RAUC keeps one open per streaming install. */
  bundleConnections: 1000,
  /** A bundle connection that sends no complete request, or stalls a response, this long is closed. */
  bundleIdleMs: 60_000,
  /** Bytes of a bundle response counted between two writes of the per-device counter. */
  bundleCountEveryBytes: 16 * MiB,

  // --- the device channel ------------------------------------------------------------------

  /** Bytes of one repository chunk message: grpc-js's default max message is 4 MiB; 64 KiB keeps memory per stream small. */
  repositoryChunkBytes: 64 * KiB,
  /** Enrollments committed together in one transaction at most: amortizes the commit, bounds a conflict's retry. */
  enrollBatch: 128,
  /** Receipts per message to a verifier thread at most: enough to amortize the hand-off, small enough to keep latency flat. */
  receiptVerifyBatch: 32,
  /** Runs of a receipt batch's transaction when PostgreSQL reports a deadlock or serialization failure. */
  receiptCommitAttempts: 3,
  /**
   * Device certificates whose chain check is cached (by fingerprint, per CA store): one entry per
   * device of the fleet a process serves. Devices connecting per check-in come back in a cycle,
   * and an evicted entry costs a parse and a signature check; the oldest entry goes first, so a
   * bound below the fleet's size misses on every call (with the device-row cache about 250
   * bytes per device: docs/device-channel.md "Device authentication").
   */
  peerCertCacheEntries: 150_000,
  /**
   * Device authentications remembered (device-channel/credential-cache.ts): one per device of the
   * fleet a process serves, for an hour (a device calls about once per check-in interval, up to
   * 10 minutes in a large fleet; staleness is bounded by the cache's listener, not by the age).
   */
  deviceCredentialCacheEntries: 150_000,
  deviceCredentialCacheTtlMs: 3_600_000,
  /**
   * Devices enrolled through one process whose remembered authentications it forgot
   * individually since the cache was last cleared (credential-cache.ts); past this the whole
   * cache is cleared instead (a burst of enrollments, when the cache holds little anyway).
   */
  forgottenDeviceEntries: 10_000,
  /** Deployments whose assignment pointer the check-in keeps (device-channel/assignment-pointers.ts); the oldest read goes first. */
  assignmentPointerCacheEntries: 1024,
  /**
   * Devices the offline detector flips per statement (resources/devices/queries/presence.ts
   * `markStaleDevicesOffline`): each statement holds its rows' locks, so heartbeats of those
   * devices wait at most one batch (about 0.1 s at 1,000 on the 2-core machine), not a fleet.
   */
  offlineFlipBatch: 1000,
  /**
   * A rollout start that assigns at least this many devices refreshes deployment_devices'
   * planner statistics in its transaction (resources/rollouts/queries.ts
   * `analyzeDeploymentDevices`); a smaller one cannot mislead the planner into much work.
   */
  analyzeAfterAssignedDevices: 1000,

  // --- caches of the receipt and vulnerability paths ---------------------------------------

  /** Signed deployments cached for receipt checks (both maps); the oldest entry goes first. */
  signedDeploymentCacheEntries: 1024,
  /** Parsed tenant device CAs by the digest of their DER (a CA certificate's bytes never change meaning). */
  parsedCaCacheEntries: 256,
  /** CVSS vectors whose score is cached; the cache is cleared when full. */
  severityScoreCacheEntries: 10_000,

  // --- vulnerability feed imports ----------------------------------------------------------

  /** OSV records written per transaction (one audit row each). */
  feedBatchRecords: 1000,
  /** Zip archives up to this size are read from memory (one read instead of one per entry). */
  inMemoryZipBytes: 256 * MiB,

  // --- devices ------------------------------------------------------------------------------

  /**
   * `q` search pages (GET /devices?q=) each process remembers with the list version they were
   * read at (resources/devices/search-cache.ts); the oldest written goes first. A page is at
   * most a page of names.
   */
  deviceSearchCachePages: 256,
  /** Devices a bulk job processes per unit of work (each its own transaction and audit rows). */
  deviceBulkBatch: 100,

  /**
   * A request Node's HTTP parser refuses (an over-long request line or headers, a malformed
   * request) is answered and the socket ended, then what the client still sends is read and
   * dropped for at most this long before the socket is destroyed: closing with unread bytes makes
   * the kernel answer them with a reset, and a client still sending its body (2 MiB behind a
   * 17 KiB URL) could lose the answer it was already sent.
   */
  clientErrorLingerMs: 2_000,

  // --- stopping ------------------------------------------------------------------------------

  /**
   * How the server process stops on SIGTERM or SIGINT (docs/server.md "Stopping"). The ports stop
   * accepting at once; calls and requests under way get `shutdownGraceMs` to finish, then the
   * device channel's HTTP/2 sessions and the HTTP connections still open are cut and the jobs
   * still running are left to their transactions; closing what is left (the last-seen flush, the
   * database pool) gets `shutdownCloseMs`. Past both the process exits whatever still waits
   * (status 1, the step named in the log): work not committed by then is rolled back by the
   * database, never half written.
   */
  shutdownGraceMs: 10_000,
  /** The second bound of a stop: closing flushes, listeners, keys and the pool. */
  shutdownCloseMs: 10_000,

  /** The PostgreSQL blob store (docs/server.md "Blob store"). */
  blobStore: Object.freeze({
    /**
     * Bytes per `blob_chunks` row. 1 MiB keeps one row's value far below PostgreSQL's 1 GB field
     * limit and a read's memory at a few chunks, while one statement per MiB keeps the per-row
     * overhead small next to the bytes moved.
     */
    chunkBytes: 1 * MiB,
    /**
     * Whole chunks one get reads per statement (one COPY on PostgreSQL), as for writes. A chunk a
     * range covers only in part is read alone, sliced by the database.
     */
    chunksPerRead: 2,
    /**
     * Read statements one get keeps under way on pooled connections: the database reads the
     * next chunks while this process sends the current ones. Memory per download is at most
     * about readsInFlight x chunksPerRead chunks, plus the one being sent.
     */
    readsInFlight: 2,
    /**
     * Chunks one put sends per statement (one COPY on PostgreSQL): a statement and its commit
     * cost about as much as a few hundred KiB of bytes, so several chunks share one.
     */
    chunksPerWrite: 4,
    /**
     * Write statements one put keeps under way on pooled connections while it reads and hashes
     * the next chunks. Memory per upload is at most (writesInFlight + 1) x chunksPerWrite chunks.
     */
    writesInFlight: 2,
    /**
     * How long a stored blob outlives its last put (or `retain`) before the collector may take
     * it, when no committed row names it: the time a caller has to commit the row that will.
     */
    graceMs: 60 * 60_000,
    /** An upload's lease on its `writing` row, renewed as it writes; a writer gone that long is collected. */
    uploadLeaseMs: 15 * 60_000,
    /** Blobs one collector statement deletes at most. */
    gcBatch: 100,
    /** How often each server process runs the collector. */
    gcIntervalMs: 60 * 60_000,
  }),
});
