/**
 * Every bound shared by the server, the agent, the CLI and the simulator, in one frozen object
 * (shaped like tuf-js's client `config.ts` defaultConfig). Byte caps are checked before
 * anything is parsed, counts before a list is walked. Other packages read these values and never
 * redefine them; README "Limits" explains the numbers.
 */
export const LIMITS = Object.freeze({
  /** A release DSSE envelope (submission, device assignment, `svc-release verify`); 64 components fit in < 100 KiB. */
  releaseEnvelopeBytes: 1024 * 1024,
  /** A receipt DSSE envelope (device upload, `verifyReceipt`, `svc-release verify-receipt`); 64 members and a certificate are ~25 KiB. */
  receiptEnvelopeBytes: 256 * 1024,
  /** Signatures on one envelope: more is not a release, it is an attempt to make a verifier work forever. */
  signatures: 16,
  /** One DER certificate; a device certificate is a few hundred bytes. */
  certificateBytes: 16 * 1024,
  /**
   * CA certificates one receipt may be verified against: a tenant's current device CA and the
   * retired ones still trusted (a rotation keeps the old CA until its last certificate expired),
   * and a CA bundle given to `svc-release verify-receipt --ca`.
   */
  deviceCaCertificates: 16,
  /** A log bundle answering a log request, as the device uploads it. */
  logBundleBytes: 16 * 1024 * 1024,
  /**
   * A legacy status report's `detail`, in UTF-16 code units (String length): the agent
   * truncates to it, the device channel refuses anything longer.
   */
  legacyDetailChars: 1024,
  /** Components of a release, hence members of a release transaction (assignment, receipt). */
  components: 64,
  profiles: 32,
  probes: 16,
  commandArgs: 32,
  /** `rollout.waves` of a signed release. */
  waves: 16,
  /** `waves` of a legacy rollout request (an operator's unsigned rollout of one artifact). */
  legacyRolloutWaves: 100,
  approvals: 32,
  attestations: 32,
  /** Ten years: longer than any device stays offline and still deserves an update. */
  maxOfflineAgeSeconds: 10 * 365 * 24 * 3600,
  /** One hour per probe. */
  probeTimeoutSeconds: 3600,
  /**
   * node:crypto KeyObjects imported from public keys, remembered by key id (the SPKI bytes are
   * compared on every hit): a server reads its authorizer keys per request, and importing a key
   * costs about as much as a verification. Authorizer keys of every tenant plus CA keys fit.
   */
  keyObjectCacheEntries: 256,
  /** Parsed certificates by PEM text (`parseCertificatePem`): tenant CAs parsed again per request or per CLI run. */
  certificatePemCacheEntries: 64,
  /** Parsed device certificates, by their exact DER (base64): one per active device in a burst of receipts. */
  certificateCacheEntries: 512,
  /** Validated release payloads, by the SHA-256 of their bytes: the releases in rollout at once. */
  releasePayloadCacheEntries: 128,
  /**
   * Device inventory (docs/inventory.md): the attributes an agent reports and the server
   * stores. Custom attributes come from the operator's file on the device; the agent refuses
   * a file over `inventoryFileBytes` or over these counts and the server refuses a report
   * over them, naming the attribute.
   */
  inventoryCustomAttributes: 64,
  /** Reported attributes of the documented set (README "Inventory"), with room for RAUC slots. */
  inventoryAttributes: 32,
  /** One attribute value, in UTF-16 code units (String length). */
  inventoryValueChars: 256,
  /** Installed members reported (one per component a release may carry). */
  inventoryMembers: 64,
  /** The custom attributes file on the device (`SVC_AGENT_INVENTORY_FILE`). */
  inventoryFileBytes: 16 * 1024,
  /**
   * Delta updates (docs/delta-updates.md). A member joins a delta, as source or target, only
   * up to this size: zstd's window must hold the whole source, and 2^deltaWindowLog is the
   * window both sides use, so the decoder's memory is bounded by it whatever the delta says.
   */
  deltaMemberBytes: 128 * 1024 * 1024,
  /** log2 of the zstd window (`--long`): 128 MiB, the size above. */
  deltaWindowLog: 27,
  /** The agent's zstd refuses a frame that needs a larger window than this (`--memory`), in MiB. */
  deltaDecoderMemoryMiB: 128,
  /** Compression level the server makes deltas with: measured, higher levels cost CPU for no smaller delta. */
  deltaZstdLevel: 3,
  /** The delivery report beside a receipt (JSON bytes): 64 members of ~200 bytes. */
  deliveryReportBytes: 32 * 1024,
  /** A member's `failure_detail` in the delivery report, in UTF-16 code units. */
  deliveryFailureDetailChars: 200,
} as const);

export type Limits = typeof LIMITS;
