import { useMutation, useQueryClient } from '@tanstack/react-query';
import { useState } from 'react';
import { api, ok } from '../../../api/client';
import { caseQueries } from '../../../api/queries/cases';
import { useCan } from '../../../api/session';
import { ErrorNote, Mono } from '../../../ui/kit';
import { words, type FilingBody, type Recipient, type MemberState, type Transport, type FilingRecord, type Submission } from './shared';

function fileSubmission(caseId: string, sid: string, body: FilingBody) {
  return ok(api.POST('/api/v1/cases/{id}/submissions/{sid}/filings', { params: { path: { id: caseId, sid } }, body }));
}

/** Records the filing of one submission to its recipients, by the operator or delivered first by the server's file or webhook transport. */
export function Filing({ caseId, submission, memberStates }: { caseId: string; submission: Submission; memberStates: MemberState[] }) {
  const can = useCan('evidence.write');
  const client = useQueryClient();
  const [recipients, setRecipients] = useState<Recipient[]>(submission.stage === 'advisory' ? ['users'] : ['csirt']);
  const [state, setState] = useState<MemberState | ''>('');
  const [reference, setReference] = useState('');
  const [transport, setTransport] = useState<Transport>('manual');
  const file = useMutation({
    mutationFn: () =>
      fileSubmission(caseId, submission.id, {
        recipients,
        transport,
        ...(state ? { member_state: state } : {}),
        ...(transport === 'manual' && reference.trim() ? { external_reference: reference.trim() } : {}),
      }),
    onSuccess: () =>
      Promise.all([
        client.invalidateQueries({ queryKey: caseQueries.detail(caseId).queryKey }),
        client.invalidateQueries({ queryKey: caseQueries.keys.submissions(caseId) }),
      ]),
  });
  if (submission.superseded_by) return <span className="muted">superseded</span>;
  const label = `the ${words(submission.stage)} submission`;
  const toggle = (r: Recipient, on: boolean) => setRecipients((rs) => (on ? [...rs, r] : rs.filter((x) => x !== r)));
  return (
    <fieldset className="plain" disabled={!can.ok}>
      <legend className="sr-only">Record the filing of {label}</legend>
      <span className="row">
        {(['csirt', 'enisa', 'users'] as const).map((r) => (
          <label key={r}>
            <input type="checkbox" checked={recipients.includes(r)} onChange={(e) => toggle(r, e.target.checked)} /> {r.toUpperCase()}
          </label>
        ))}
        <select aria-label={`Coordinator CSIRT Member State for ${label}`} value={state} onChange={(e) => setState(e.target.value as MemberState | '')}>
          <option value="">Member State</option>
          {memberStates.map((m) => (
            <option key={m} value={m}>
              {m}
            </option>
          ))}
        </select>
        <select aria-label={`Transport for ${label}`} value={transport} onChange={(e) => setTransport(e.target.value as Transport)}>
          <option value="manual">filed by me</option>
          <option value="file">file (server outbox)</option>
          <option value="webhook">webhook (configured URL)</option>
        </select>
        {transport === 'manual' && (
          <input
            aria-label={`External reference for ${label}`}
            placeholder="reference"
            value={reference}
            onChange={(e) => setReference(e.target.value)}
            size={10}
          />
        )}
        <button
          type="button"
          disabled={!can.ok || file.isPending || recipients.length === 0}
          title={can.ok ? undefined : can.reason}
          onClick={() => file.mutate()}
        >
          {transport === 'manual' ? 'Record filing' : 'Deliver and record filing'}
          <span className="sr-only"> of {label}</span>
        </button>
      </span>
      {!can.ok && <span className="reason">{can.reason}</span>}
      {file.data && <FilingResult filing={file.data} />}
      <ErrorNote error={file.error} />
    </fieldset>
  );
}

/** What a recorded filing says: where the document went and the reference the recipient returned. */
function FilingResult({ filing }: { filing: FilingRecord }) {
  const files = Array.isArray(filing.delivery.files) ? filing.delivery.files.map(String) : [];
  const status = typeof filing.delivery.status === 'number' ? filing.delivery.status : undefined;
  return (
    <div role="status">
      Filed to {filing.recipients.map((r) => r.toUpperCase()).join(' and ')}
      {filing.transport === 'manual' && ' (recorded as filed by you)'}
      {filing.transport === 'webhook' && ` by the webhook (it answered ${status ?? 'with success'})`}
      {filing.transport === 'file' && ' by the file transport'}
      {filing.external_reference !== null && <>, reference {filing.external_reference}</>}.
      {files.length > 0 && (
        <ul className="plain">
          {files.map((f) => (
            <li key={f}>
              written to <Mono>{f}</Mono>
            </li>
          ))}
        </ul>
      )}
    </div>
  );
}
