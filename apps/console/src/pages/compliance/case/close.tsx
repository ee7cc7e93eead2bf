import { useState } from 'react';
import { api, ok } from '../../../api/client';
import { ErrorNote, Field, Guard } from '../../../ui/kit';
import { useCaseWrite, type Case } from './shared';

/** Closes a reportable case, or reopens a closed or not reportable one, with a reason. */
export function CloseOrReopen({ c }: { c: Case }) {
  const [reason, setReason] = useState('');
  const reopen = c.state === 'closed' || c.state === 'not_reportable';
  const act = useCaseWrite(c.id, () =>
    reopen
      ? ok(api.POST('/api/v1/cases/{id}/reopen', { params: { path: { id: c.id } }, body: { reason } }))
      : ok(api.POST('/api/v1/cases/{id}/close', { params: { path: { id: c.id } }, body: { reason } })),
  );
  if (c.state === 'open') return null;
  return (
    <section aria-labelledby="close-h">
      <h2 id="close-h">{reopen ? 'Reopen the case' : 'Close the case'}</h2>
      {!reopen && <p className="muted">A reportable case closes once its final report is filed.</p>}
      <Guard perm="evidence.write">
        <form
          className="filters"
          onSubmit={(e) => {
            e.preventDefault();
            act.mutate(undefined);
          }}
        >
          <Field label={reopen ? 'Reason for reopening' : 'Reason for closing'}>
            {(fid) => <input id={fid} required value={reason} onChange={(e) => setReason(e.target.value)} className="wide" />}
          </Field>
          <button type="submit" className={reopen ? undefined : 'danger'} disabled={act.isPending}>
            {reopen ? 'Reopen case' : 'Close case'}
          </button>
        </form>
        <ErrorNote error={act.error} />
      </Guard>
    </section>
  );
}
