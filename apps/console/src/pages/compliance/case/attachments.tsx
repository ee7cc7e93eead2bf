import { keepPreviousData, useMutation, useQuery, useQueryClient } from '@tanstack/react-query';
import { useState, type FormEvent } from 'react';
import { api, ok, rawWrite } from '../../../api/client';
import { caseQueries } from '../../../api/queries/cases';
import { useCan } from '../../../api/session';
import { Badge, ErrorNote, Field, Guard, Mono, Paged, When, useListParams } from '../../../ui/kit';

/** The case's attachments (paged): upload, download, redaction. */
export function Attachments({ caseId }: { caseId: string }) {
  const list = useListParams('attachments.');
  const client = useQueryClient();
  const query = { limit: list.limit, offset: list.offset };
  const attachments = useQuery({ ...caseQueries.attachments(caseId, query), placeholderData: keepPreviousData });
  const refresh = () => client.invalidateQueries({ queryKey: caseQueries.keys.attachments(caseId) });
  const upload = useMutation({
    mutationFn: (form: FormData) => rawWrite('post', '/api/v1/cases/{id}/attachments', { params: { path: { id: caseId } }, body: form }),
    onSuccess: refresh,
  });
  const submit = (e: FormEvent<HTMLFormElement>) => {
    e.preventDefault();
    const d = new FormData(e.currentTarget);
    // the description first, then the file (the server reads the parts in order)
    const form = new FormData();
    const description = String(d.get('description') ?? '').trim();
    if (description) form.set('description', description);
    form.set('file', d.get('file') as File);
    upload.mutate(form, { onSuccess: () => (e.target as HTMLFormElement).reset() });
  };
  return (
    <section aria-labelledby="attachments-h">
      <h2 id="attachments-h">Attachments</h2>
      <Guard perm="evidence.write" legend="Attach a file">
        <form className="filters" onSubmit={submit}>
          <Field label="Attachment file">{(fid) => <input id={fid} name="file" type="file" required />}</Field>
          <Field label="Attachment description">{(fid) => <input id={fid} name="description" />}</Field>
          <button type="submit" disabled={upload.isPending}>
            Attach
          </button>
        </form>
        <ErrorNote error={upload.error} />
      </Guard>
      <Paged what="attachments" result={attachments} list={list} head={['File', 'Type', 'Bytes', 'SHA-256', 'Added', 'State']}>
        {(page) =>
          page.attachments.map((a) => (
            <tr key={a.id}>
              <td>
                {a.redaction ? (
                  a.filename
                ) : (
                  <a href={`/api/v1/cases/${caseId}/attachments/${a.id}/content`} download={a.filename}>
                    {a.filename}
                  </a>
                )}
                {a.description && <div className="muted">{a.description}</div>}
              </td>
              <td>{a.content_type}</td>
              <td>{a.length.toLocaleString()}</td>
              <td>
                <Mono>{a.digest.slice(0, 19)}…</Mono>
              </td>
              <td>
                {a.added_by}, <When at={a.added_at} />
              </td>
              <td>
                {a.redaction ? (
                  <span>
                    <Badge value="redacted" /> {a.redaction.reason} ({a.redaction.redacted_by})
                  </span>
                ) : (
                  <Redact caseId={caseId} attachment={a.id} filename={a.filename} onDone={() => void refresh()} />
                )}
              </td>
            </tr>
          ))
        }
      </Paged>
    </section>
  );
}

/** Redacts one attachment with a reason: its content is no longer served, its record stays. */
function Redact({ caseId, attachment, filename, onDone }: { caseId: string; attachment: string; filename: string; onDone: () => void }) {
  const can = useCan('evidence.write');
  const [reason, setReason] = useState('');
  const redact = useMutation({
    mutationFn: () => ok(api.POST('/api/v1/cases/{id}/attachments/{aid}/redaction', { params: { path: { id: caseId, aid: attachment } }, body: { reason } })),
    onSuccess: onDone,
  });
  return (
    <span className="row">
      <input aria-label={`Redaction reason for ${filename}`} value={reason} disabled={!can.ok} onChange={(e) => setReason(e.target.value)} size={12} />
      <button
        type="button"
        className="danger"
        disabled={!can.ok || reason.trim() === '' || redact.isPending}
        title={can.ok ? undefined : can.reason}
        onClick={() => redact.mutate()}
      >
        Redact<span className="sr-only"> {filename}</span>
      </button>
      {!can.ok && <span className="sr-only">{can.reason}</span>}
      <ErrorNote error={redact.error} />
    </span>
  );
}
