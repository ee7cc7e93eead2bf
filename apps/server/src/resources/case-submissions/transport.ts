/**
 * How a submission document leaves the server. The EU single reporting platform has no public
 * API yet, so the server produces the exact document and the operator files it; the seam below
 * lets an API transport be plugged in later without touching the case model:
 *
 * - `file`: writes `<outbox>/<tenant>/<case>/<submission>.json` and `.pdf` for the operator (or
 *   a collector) to pick up;
 * - `webhook`: POSTs the document to the ONE URL the server is configured with
 *   (`SVC_EVIDENCE_WEBHOOK_URL`), never to a URL given in a request;
 * - `manual` (no transport): the operator filed it themselves and records when and the
 *   reference the recipient returned.
 *
 * A delivery happens before the filing is recorded (the record says it was delivered); a
 * failed delivery records nothing and answers TRANSPORT_FAILED.
 */
import { randomUUID } from 'node:crypto';
import { mkdir, rename, writeFile } from 'node:fs/promises';
import { hostname } from 'node:os';
import { join } from 'node:path';
import { isUuid } from '@svc/release-core';
import { ConfigError } from '../../config.js';
import { ServerError } from '../../errors/server-error.js';
import type { AttachmentLimits } from '../case-attachments/limits.js';
import { SERVER_LIMITS } from '../../limits.js';

export interface OutgoingSubmission {
  tenantId: string;
  caseId: string;
  submissionId: string;
  stage: string;
  digest: string;
  /** The exact canonical JSON document. */
  json: Uint8Array;
  pdf: Uint8Array;
  /**
   * The latest reporting-platform packet prepared from this submission (srp-packet.ts), null
   * when none was: the single reporting platform's form fields in the form's order. An adapter
   * for a platform API maps these to the API's fields; the file and webhook transports send the
   * document alone.
   */
  packet?: OutgoingPacket | null;
}

export interface OutgoingPacket {
  id: string;
  digest: string;
  /** The version of the form's field table the packet followed (srp-form.ts SRP_FORM.version). */
  formVersion: string;
  fields: { id: string; label: string; value: string | null; required: boolean }[];
}

export interface Delivery {
  /** A reference the recipient returned, if any. */
  reference: string | null;
  /** Recorded with the filing: where it went and what came back. */
  detail: Record<string, unknown>;
}

export interface SubmissionTransport {
  readonly name: 'file' | 'webhook';
  deliver(s: OutgoingSubmission): Promise<Delivery>;
}

/** Settings of the evidence area (AppContext.evidence); main.ts reads them from the environment. */
export interface EvidenceOptions {
  /** `SVC_EVIDENCE_WEBHOOK_URL`: the only URL the webhook transport posts to. */
  webhookUrl?: string | undefined;
  /** Where the file transport writes; default `<SVC_DATA_DIR>/evidence-outbox`. */
  outboxDir?: string | undefined;
  /** Webhook timeout in milliseconds (default 10 s). */
  webhookTimeoutMs?: number | undefined;
  /** `SVC_CSAF_BASE_URL`: the https URL of the publisher's CSAF directory, where advisories are published (their canonical URL). */
  csafBaseUrl?: string | undefined;
  /** Overrides of the attachment bounds (resources/case-attachments/limits.ts). */
  attachmentLimits?: Partial<AttachmentLimits> | undefined;
}

/**
 * `SVC_EVIDENCE_WEBHOOK_URL` (optional, http or https) and `SVC_CSAF_BASE_URL` (optional,
 * https): one clear line naming the variable when bad.
 */
export function evidenceOptionsFromEnv(env: NodeJS.ProcessEnv): EvidenceOptions {
  const webhook = urlSetting(env, 'SVC_EVIDENCE_WEBHOOK_URL', ['http:', 'https:']);
  const csafBase = urlSetting(env, 'SVC_CSAF_BASE_URL', ['https:']);
  if (csafBase !== undefined && (csafBase.search !== '' || csafBase.hash !== '')) throw new ConfigError('SVC_CSAF_BASE_URL: must have no query or fragment');
  return {
    ...(webhook === undefined ? {} : { webhookUrl: webhook.toString() }),
    // without a trailing slash: advisories' paths are appended to it
    ...(csafBase === undefined ? {} : { csafBaseUrl: csafBase.toString().replace(/\/+$/, '') }),
  };
}

function urlSetting(env: NodeJS.ProcessEnv, name: string, protocols: readonly string[]): URL | undefined {
  const raw = env[name]?.trim();
  if (raw === undefined || raw === '') return undefined;
  let url: URL;
  try {
    url = new URL(raw);
  } catch {
    throw new ConfigError(`${name}: not a URL`);
  }
  const expected = protocols.map((p) => `${p}//`).join(' or ');
  if (!protocols.includes(url.protocol)) throw new ConfigError(`${name}: must be an ${expected} URL`);
  return url;
}

export class FileTransport implements SubmissionTransport {
  readonly name = 'file';
  constructor(readonly dir: string) {}

  async deliver(s: OutgoingSubmission): Promise<Delivery> {
    // every path part is a UUID: nothing a request sends can steer the path
    if (![s.tenantId, s.caseId, s.submissionId].every(isUuid)) throw new Error('file transport: ids must be UUIDs');
    const dir = join(this.dir, s.tenantId, s.caseId);
    await mkdir(dir, { recursive: true, mode: 0o700 });
    const files: string[] = [];
    for (const [ext, bytes] of [
      ['json', s.json],
      ['pdf', s.pdf],
    ] as const) {
      const path = join(dir, `${s.submissionId}.${ext}`);
      const tmp = join(dir, `.${randomUUID()}.tmp`);
      await writeFile(tmp, bytes, { mode: 0o600 });
      await rename(tmp, path);
      files.push(path);
    }
    // the outbox is this host's directory: with several server hosts the filing names which one holds the files
    return { reference: null, detail: { host: hostname(), files } };
  }
}

export class WebhookTransport implements SubmissionTransport {
  readonly name = 'webhook';
  constructor(
    readonly url: string,
    readonly timeoutMs = 10_000,
  ) {}

  /**
   * POSTs the canonical JSON document (the PDF is not sent: the document is the submission).
   * A 2xx answer is a delivery; a JSON answer's string `reference` is recorded as the external
   * reference.
   */
  async deliver(s: OutgoingSubmission): Promise<Delivery> {
    let res: Response;
    try {
      res = await fetch(this.url, {
        method: 'POST',
        headers: {
          'content-type': 'application/json',
          'x-svc-submission-id': s.submissionId,
          'x-svc-submission-digest': s.digest,
          'x-svc-submission-stage': s.stage,
        },
        body: s.json,
        redirect: 'manual',
        signal: AbortSignal.timeout(this.timeoutMs),
      });
    } catch (e) {
      throw new ServerError(
        'TRANSPORT_FAILED',
        `webhook: no answer from the configured URL (${(e as Error).name === 'TimeoutError' ? `timed out after ${this.timeoutMs} ms` : (e as Error).message})`,
        { cause: e },
      );
    }
    const text = await readCapped(res);
    if (res.status < 200 || res.status > 299) throw new ServerError('TRANSPORT_FAILED', `webhook: the configured URL answered ${res.status}`);
    let reference: string | null = null;
    try {
      const body = JSON.parse(text) as { reference?: unknown };
      if (typeof body.reference === 'string' && body.reference.length > 0 && body.reference.length <= 200) reference = body.reference;
    } catch {
      // a non-JSON answer carries no reference
    }
    return { reference, detail: { status: res.status } };
  }
}

async function readCapped(res: Response): Promise<string> {
  if (res.body === null) return '';
  const chunks: Uint8Array[] = [];
  let total = 0;
  for await (const chunk of res.body as AsyncIterable<Uint8Array>) {
    total += chunk.byteLength;
    if (total > SERVER_LIMITS.caseSubmissionResponseBytes) break;
    chunks.push(chunk);
  }
  return Buffer.concat(chunks).toString('utf8');
}

/** The transport a filing asks for, from the server's settings: TRANSPORT_UNAVAILABLE when it is not configured. */
export function transportFor(name: 'file' | 'webhook', options: EvidenceOptions | undefined, dataDir: string): SubmissionTransport {
  if (name === 'file') return new FileTransport(options?.outboxDir ?? join(dataDir, 'evidence-outbox'));
  if (options?.webhookUrl === undefined)
    throw new ServerError('TRANSPORT_UNAVAILABLE', 'transport: the webhook transport is not configured on this server (SVC_EVIDENCE_WEBHOOK_URL)');
  return new WebhookTransport(options.webhookUrl, options.webhookTimeoutMs);
}
