/**
 * The evidence archive of one case: a tar, streamed entry by entry, ending with a manifest that
 * lists every file's path, length and SHA-256, signed by the tenant's evidence key (DSSE,
 * Ed25519). Layout (docs/article-14.md "Case export"):
 *
 *   case.json                              the case, its records and its clocks at export time
 *   assessments.json                       every decision (assessments, reopenings, closure)
 *   submissions/index.json                 every submission with its filings
 *   submissions/NNN-<stage>-<id>.json      the exact submission documents
 *   submissions/NNN-<stage>-<id>.pdf       their PDFs
 *   packets/index.json                     every reporting-platform packet
 *   packets/NNN-<stage>-<id>.json, .txt    the exact packets and their text
 *   attachments/index.json                 every attachment, redactions included
 *   attachments/<id>/<filename>            the bytes of those not redacted
 *   findings/findings-and-exposure.json    linked findings and exposure at export time
 *   receipts/<digest>.dsse.json            the device-signed receipts that bear on the case
 *   receipts/index-NNNNNN.jsonl            what each receipt is, 1000 per file
 *   receipts/device-cas.pem                every device CA certificate of the tenant (current and retired): the receipts verify offline
 *   audit/events-NNNNNN.jsonl              the case's audit-trail slice, 1000 events per file
 *   evidence-key.pub.pem                   the public key (verify with a key obtained separately)
 *   manifest.json                          the signed payload: every file above with its digest
 *   manifest.dsse.json                     the DSSE envelope over manifest.json
 *
 * Memory: file contents stream (blobs are piped, JSON is written per document or per 1000
 * rows); what accumulates is one manifest line per file. The receipts are capped at
 * `SERVER_LIMITS.caseExports.receipts`; the manifest says when the cap was reached.
 */
import { createHash } from 'node:crypto';
import type { Readable } from 'node:stream';
import { pipeline } from 'node:stream/promises';
import { canonicalize, digestFromHex, envelopeBytes, sha256Digest, signEnvelope, type Digest } from '@svc/release-core';
import { pack as tarPack, type Pack } from 'tar-stream';
import type { BlobStore } from '../../blobs/index.js';
import type { Db } from '../../store/tx.js';
import { allAttachments } from '../case-attachments/queries.js';
import { attachmentView } from '../case-attachments/views.js';
import { casePacketsWithDocuments, caseSubmissionsWithDocuments, listFilings } from '../case-submissions/queries.js';
import { packetText, type PacketDocument } from '../case-submissions/srp-packet.js';
import { linkedEvidence } from '../cases/evidence.js';
import { iterateCaseAudit, listMeasures, type CaseRow } from '../cases/queries.js';
import { caseRecords } from '../cases/records.js';
import { caseView, decisionView } from '../cases/views.js';
import { tenantDeviceCaBundlePem } from '../device-ca/queries.js';
import { exportFileName } from '../release-receipts/export.js';
import type { EvidenceKey } from './evidence-key.js';
import { iterateCaseReceipts } from './queries.js';
import { SERVER_LIMITS } from '../../limits.js';

/** DSSE payload type of a case-export manifest. */
export const EVIDENCE_MANIFEST_TYPE = 'svc.case-evidence.v1';

export interface ManifestFile {
  path: string;
  length: number;
  digest: Digest;
}

export interface CaseExportInput {
  db: Db;
  blobs: BlobStore;
  tenantId: string;
  caseRow: CaseRow;
  exportedAt: Date;
  exportedBy: string;
  /** The newest audit sequence number when the export began: the slice ends there. */
  auditCutoff: string;
  key: EvidenceKey;
}

function json(value: unknown): Uint8Array {
  return Buffer.from(`${JSON.stringify(value, null, 2)}\n`);
}

function jsonLines(rows: readonly unknown[]): Uint8Array {
  return Buffer.from(rows.map((r) => `${JSON.stringify(r)}\n`).join(''));
}

function pad(n: number, width: number): string {
  return String(n).padStart(width, '0');
}

class ArchiveWriter {
  readonly files: ManifestFile[] = [];
  constructor(
    readonly pack: Pack,
    readonly mtime: Date,
  ) {}

  /** One entry from bytes in memory (documents, JSON, a batch of lines). */
  bytes(path: string, bytes: Uint8Array, listed = true): Promise<void> {
    if (listed) this.files.push({ path, length: bytes.length, digest: sha256Digest(bytes) });
    return new Promise((resolve, reject) => {
      this.pack.entry({ name: path, size: bytes.length, mtime: this.mtime, mode: 0o644 }, Buffer.from(bytes.buffer, bytes.byteOffset, bytes.length), (err) =>
        err ? reject(err) : resolve(),
      );
    });
  }

  /** One entry piped from a blob, hashed on the way; refused if the bytes are not the recorded ones. */
  async blob(path: string, blobs: BlobStore, digest: Digest): Promise<void> {
    const { stream, totalLength } = await blobs.get(digest);
    const hash = createHash('sha256');
    const entry = this.pack.entry({ name: path, size: totalLength, mtime: this.mtime, mode: 0o644 });
    await pipeline(
      stream,
      async function* hashing(chunks: AsyncIterable<Buffer>) {
        for await (const chunk of chunks) {
          hash.update(chunk);
          yield chunk;
        }
      },
      entry as unknown as NodeJS.WritableStream,
    );
    const actual = digestFromHex(hash.digest('hex'));
    if (actual !== digest) throw new Error(`blob ${digest} read back as ${actual}: the archive is not written`);
    this.files.push({ path, length: totalLength, digest: actual });
  }
}

/** Streams the archive; the returned stream errors (and ends) if anything fails midway. */
export function caseExportStream(input: CaseExportInput): Readable {
  const pack = tarPack();
  void writeArchive(input, new ArchiveWriter(pack, input.exportedAt)).then(
    () => pack.finalize(),
    (e: unknown) => pack.destroy(e as Error),
  );
  return pack as unknown as Readable;
}

async function writeArchive(input: CaseExportInput, w: ArchiveWriter): Promise<void> {
  const { db, tenantId, caseRow: c } = input;
  const records = await caseRecords(db, tenantId, c, input.exportedAt);
  await w.bytes('case.json', json({ exported_at: input.exportedAt.toISOString(), case: caseView(c, records, input.exportedAt) }));
  await w.bytes('assessments.json', json(records.decisions.map(decisionView)));

  const submissions = await caseSubmissionsWithDocuments(db, tenantId, c.id);
  const filings = await listFilings(db, tenantId, c.id);
  const names = submissions.map((s, i) => `submissions/${pad(i + 1, 3)}-${s.stage}-${s.id}`);
  await w.bytes(
    'submissions/index.json',
    json(
      submissions.map((s, i) => ({
        id: s.id,
        stage: s.stage,
        supersedes_id: s.supersedes_id,
        request_id: s.request_id,
        digest: s.digest,
        pdf_digest: s.pdf_digest,
        created_by: s.created_by,
        created_at: s.created_at.toISOString(),
        document: `${names[i]}.json`,
        pdf: `${names[i]}.pdf`,
        filings: filings
          .filter((f) => f.submission_id === s.id)
          .map((f) => ({
            id: f.id,
            recipients: f.recipients,
            member_state: f.member_state,
            transport: f.transport,
            external_reference: f.external_reference,
            delivery: f.delivery,
            filed_by: f.filed_by,
            filed_at: f.filed_at.toISOString(),
          })),
      })),
    ),
  );
  for (const [i, s] of submissions.entries()) {
    await w.bytes(`${names[i]}.json`, s.document);
    await w.blob(`${names[i]}.pdf`, input.blobs, s.pdf_digest);
  }

  const packets = await casePacketsWithDocuments(db, tenantId, c.id);
  const packetNames = packets.map((p, i) => `packets/${pad(i + 1, 3)}-${p.stage}-${p.id}`);
  await w.bytes(
    'packets/index.json',
    json(
      packets.map((p, i) => ({
        id: p.id,
        stage: p.stage,
        form_version: p.form_version,
        submission_id: p.submission_id,
        digest: p.digest,
        missing: p.missing,
        created_by: p.created_by,
        created_at: p.created_at.toISOString(),
        document: `${packetNames[i]}.json`,
        text: `${packetNames[i]}.txt`,
      })),
    ),
  );
  for (const [i, p] of packets.entries()) {
    await w.bytes(`${packetNames[i]}.json`, p.document);
    const doc = JSON.parse(Buffer.from(p.document).toString('utf8')) as PacketDocument;
    await w.bytes(`${packetNames[i]}.txt`, Buffer.from(packetText(doc, p.digest), 'utf8'));
  }

  const attachments = await allAttachments(db, tenantId, c.id);
  await w.bytes(
    'attachments/index.json',
    json(attachments.map((a) => ({ ...attachmentView(a), file: a.redacted_at === null ? `attachments/${a.id}/${a.filename}` : null }))),
  );
  for (const a of attachments) if (a.redacted_at === null) await w.blob(`attachments/${a.id}/${a.filename}`, input.blobs, a.digest);

  const linked = await linkedEvidence(db, tenantId, c, { findings: SERVER_LIMITS.caseExports.findings, devices: SERVER_LIMITS.caseExports.exposedDevices });
  await w.bytes('findings/findings-and-exposure.json', json({ exported_at: input.exportedAt.toISOString(), artifact_ids: c.artifact_ids, ...linked }));

  const measures = await listMeasures(db, tenantId, c.id);
  const rolloutIds = [...new Set(measures.map((m) => m.rollout_id).filter((id): id is string => id !== null))];
  let receiptCount = 0;
  let index: unknown[] = [];
  const flushIndex = async () => {
    if (index.length === 0) return;
    await w.bytes(`receipts/index-${pad(Math.ceil(receiptCount / SERVER_LIMITS.caseExports.linesPerFile), 6)}.jsonl`, jsonLines(index));
    index = [];
  };
  for await (const r of iterateCaseReceipts(
    db,
    tenantId,
    { rolloutIds, deviceNames: c.device_names, groupIds: c.group_ids, since: c.aware_at },
    SERVER_LIMITS.caseExports.receipts,
  )) {
    const file = exportFileName(r);
    await w.bytes(file, r.envelope_bytes);
    receiptCount += 1;
    index.push({
      file,
      receipt_id: r.id,
      device: r.device_name,
      release_id: r.release_id,
      rollout_id: r.rollout_id,
      transaction_id: r.deployment_id,
      payload_digest: r.payload_digest,
      envelope_digest: r.envelope_digest,
      label: r.label,
      accepted_at: r.accepted_at.toISOString(),
    });
    if (index.length === SERVER_LIMITS.caseExports.linesPerFile) await flushIndex();
  }
  await flushIndex();
  // whichever of the tenant's device CAs issued a receipt's certificate (a rotation retires one), it is here
  if (receiptCount > 0) await w.bytes('receipts/device-cas.pem', Buffer.from(await tenantDeviceCaBundlePem(db, tenantId)));

  let auditFiles = 0;
  let auditEvents = 0;
  for await (const batch of iterateCaseAudit(db, tenantId, c.id, input.auditCutoff, SERVER_LIMITS.caseExports.linesPerFile)) {
    auditFiles += 1;
    auditEvents += batch.length;
    await w.bytes(
      `audit/events-${pad(auditFiles, 6)}.jsonl`,
      jsonLines(
        batch.map((e) => ({
          id: e.id,
          seq: String(e.seq),
          at: new Date(e.at).toISOString(),
          actor: e.actor,
          credential: e.credential,
          action: e.action,
          target: e.target,
          request_id: e.request_id,
          detail: e.detail,
        })),
      ),
    );
  }

  await w.bytes('evidence-key.pub.pem', Buffer.from(input.key.publicKeyPem));

  const manifest = {
    type: EVIDENCE_MANIFEST_TYPE,
    tenant: tenantId,
    case: { id: c.id, kind: c.kind, state: c.state, title: c.title },
    exported_at: input.exportedAt.toISOString(),
    exported_by: input.exportedBy,
    audit: { events: auditEvents, through_seq: input.auditCutoff },
    receipts: { count: receiptCount, capped: receiptCount >= SERVER_LIMITS.caseExports.receipts },
    key: { keyid: input.key.keyid, algorithm: 'ed25519' },
    files: w.files,
  };
  const payload = canonicalize(manifest);
  const envelope = signEnvelope(EVIDENCE_MANIFEST_TYPE, payload, input.key.privateKey);
  await w.bytes('manifest.json', payload, false);
  await w.bytes('manifest.dsse.json', envelopeBytes(envelope), false);
}
