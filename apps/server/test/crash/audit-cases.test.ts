import { auditCrashSuite, type CrashRequest } from '../helpers/audit-crash.js';
import { VALID_CONTENT } from '../fixtures/cases.js';
import { attachmentMultipart } from '../fixtures/cases-multipart.js';
import type { ReleaseFixture } from '../fixtures/release-flow.js';

/** A case opened through the API, awareness one hour before the fixture's clock. */
async function opened(f: ReleaseFixture, title: string, over: Record<string, unknown> = {}): Promise<string> {
  const r = await f.api('POST', '/api/v1/cases', {
    kind: 'exploited_vulnerability',
    title,
    owner: 'psirt',
    awareness: { aware_at: new Date(f.t.clock.now().getTime() - 3600_000).toISOString(), aware_by: 'alice', evidence: 'report' },
    ...over,
  });
  if (r.status !== 201) throw new Error(`open ${title}: ${r.status} ${JSON.stringify(r.body)}`);
  return r.body.id as string;
}

async function submitted(f: ReleaseFixture, caseId: string, stage: 'early_warning' | 'final_report'): Promise<string> {
  const r = await f.api('POST', `/api/v1/cases/${caseId}/submissions`, { stage, content: VALID_CONTENT[stage].exploited_vulnerability });
  if (r.status !== 201) throw new Error(`submit ${stage}: ${r.status} ${JSON.stringify(r.body)}`);
  return r.body.id as string;
}

const caseView = (id: string): CrashRequest => ({ method: 'GET', url: `/api/v1/cases/${id}` });

auditCrashSuite('Article 14 cases', [
  {
    name: 'case open',
    action: 'case.open',
    prepare: async () => ({
      request: {
        method: 'POST',
        url: '/api/v1/cases',
        payload: {
          kind: 'severe_incident',
          title: 'crash-open',
          owner: 'o',
          products: ['crash-open'],
          awareness: { aware_at: '2026-01-01T00:00:00Z', aware_by: 'a', evidence: 'e' },
        },
      },
      observe: { method: 'GET', url: '/api/v1/cases?product=crash-open' },
    }),
  },
  {
    name: 'case update',
    action: 'case.update',
    prepare: async (f) => {
      const id = await opened(f, 'crash-update');
      return { request: { method: 'PATCH', url: `/api/v1/cases/${id}`, payload: { owner: 'someone else' } }, observe: caseView(id) };
    },
  },
  {
    name: 'awareness correction',
    action: 'case.awareness-correct',
    prepare: async (f) => {
      const id = await opened(f, 'crash-awareness');
      return {
        request: {
          method: 'POST',
          url: `/api/v1/cases/${id}/awareness`,
          payload: { aware_at: '2026-01-01T00:00:00Z', aware_by: 'bob', evidence: 'older log', reason: 'earlier evidence found' },
        },
        observe: caseView(id),
      };
    },
  },
  {
    name: 'assessment',
    action: 'case.assess',
    prepare: async (f) => {
      const id = await opened(f, 'crash-assess');
      return {
        request: { method: 'POST', url: `/api/v1/cases/${id}/assessments`, payload: { outcome: 'not_reportable', rationale: 'not exploitable' } },
        observe: caseView(id),
      };
    },
  },
  {
    name: 'reopen',
    action: 'case.reopen',
    prepare: async (f) => {
      const id = await opened(f, 'crash-reopen');
      await f.api('POST', `/api/v1/cases/${id}/assessments`, { outcome: 'not_reportable', rationale: 'r' });
      return { request: { method: 'POST', url: `/api/v1/cases/${id}/reopen`, payload: { reason: 'new exploit' } }, observe: caseView(id) };
    },
  },
  {
    name: 'close',
    action: 'case.close',
    prepare: async (f) => {
      const id = await opened(f, 'crash-close');
      await f.api('POST', `/api/v1/cases/${id}/assessments`, { outcome: 'reportable', rationale: 'r' });
      const s = await submitted(f, id, 'final_report');
      await f.api('POST', `/api/v1/cases/${id}/submissions/${s}/filings`, { recipients: ['enisa'] });
      return { request: { method: 'POST', url: `/api/v1/cases/${id}/close`, payload: { reason: 'done' } }, observe: caseView(id) };
    },
  },
  {
    name: 'corrective measure',
    action: 'case.corrective-measure',
    prepare: async (f) => {
      const id = await opened(f, 'crash-measure');
      return {
        request: { method: 'POST', url: `/api/v1/cases/${id}/corrective-measure`, payload: { description: 'workaround published' } },
        observe: caseView(id),
      };
    },
  },
  {
    name: 'intermediate-report request',
    action: 'case.intermediate-request',
    prepare: async (f) => {
      const id = await opened(f, 'crash-request');
      return {
        request: { method: 'POST', url: `/api/v1/cases/${id}/intermediate-requests`, payload: { requested_by: 'CSIRT', due_at: '2099-01-01T00:00:00Z' } },
        observe: caseView(id),
      };
    },
  },
  {
    name: 'submission (after its PDF is stored)',
    action: 'case.submission-create',
    prepare: async (f) => {
      const id = await opened(f, 'crash-submit');
      return {
        request: {
          method: 'POST',
          url: `/api/v1/cases/${id}/submissions`,
          payload: { stage: 'early_warning', content: VALID_CONTENT.early_warning.exploited_vulnerability },
        },
        observe: { method: 'GET', url: `/api/v1/cases/${id}/submissions` },
      };
    },
  },
  {
    name: 'filing',
    action: 'case.submission-file',
    prepare: async (f) => {
      const id = await opened(f, 'crash-file');
      const s = await submitted(f, id, 'early_warning');
      return {
        request: {
          method: 'POST',
          url: `/api/v1/cases/${id}/submissions/${s}/filings`,
          payload: { recipients: ['csirt', 'enisa'], member_state: 'DE', external_reference: 'SRP-1' },
        },
        observe: caseView(id),
      };
    },
  },
  {
    name: 'reporting-platform packet',
    action: 'case.packet-create',
    prepare: async (f) => {
      const id = await opened(f, 'crash-packet');
      await submitted(f, id, 'early_warning');
      return {
        request: { method: 'POST', url: `/api/v1/cases/${id}/srp-packets`, payload: { stage: 'early_warning' } },
        observe: { method: 'GET', url: `/api/v1/cases/${id}/srp-packets` },
      };
    },
  },
  {
    name: 'attachment (after its bytes are stored)',
    action: 'case.attachment-add',
    prepare: async (f) => {
      const id = await opened(f, 'crash-attach');
      // ASCII only: the body travels to the child as a JSON string
      const { payload, contentType } = attachmentMultipart([{ name: 'file', filename: 'notes.txt', type: 'text/plain', body: 'triage notes\n' }]);
      return {
        request: { method: 'POST', url: `/api/v1/cases/${id}/attachments`, payload: payload.toString('utf8'), headers: { 'content-type': contentType } },
        observe: { method: 'GET', url: `/api/v1/cases/${id}/attachments` },
      };
    },
  },
  {
    name: 'attachment redaction',
    action: 'case.attachment-redact',
    prepare: async (f) => {
      const id = await opened(f, 'crash-redact');
      const { payload, contentType } = attachmentMultipart([{ name: 'file', filename: 'data.txt', type: 'text/plain', body: 'customer data\n' }]);
      const a = await f.t.app.inject({ method: 'POST', url: `/api/v1/cases/${id}/attachments`, headers: { ...f.admin, 'content-type': contentType }, payload });
      const aid = JSON.parse(a.body).id as string;
      return {
        request: { method: 'POST', url: `/api/v1/cases/${id}/attachments/${aid}/redaction`, payload: { reason: 'personal data' } },
        observe: { method: 'GET', url: `/api/v1/cases/${id}/attachments/${aid}` },
      };
    },
  },
  {
    name: 'export (audited before the archive streams)',
    action: 'case.export',
    prepare: async (f) => {
      const id = await opened(f, 'crash-export');
      return { request: { method: 'GET', url: `/api/v1/cases/${id}/export` }, observe: { method: 'GET', url: `/api/v1/cases/${id}/audit` } };
    },
  },
  {
    name: 'evidence key rotation (after the new key file is written)',
    action: 'evidence-key.rotate',
    prepare: async (f) => {
      // key 1 is recorded on first use
      const first = await f.api('GET', '/api/v1/evidence-key');
      if (first.status !== 200) throw new Error(`evidence key: ${first.status} ${JSON.stringify(first.body)}`);
      return { request: { method: 'POST', url: '/api/v1/evidence-keys/rotate' }, observe: { method: 'GET', url: '/api/v1/evidence-keys' } };
    },
  },
]);
