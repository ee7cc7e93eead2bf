import type { FormEvent } from 'react';
import { api, ok } from '../../../api/client';
import { ErrorNote, Field, Guard, erroredField, fieldErrorId } from '../../../ui/kit';
import { words, useCaseWrite, type Case, type CaseUpdate } from './shared';

const EDITABLE_LISTS = [
  ['products', 'Case products', 'product ids'],
  ['artifact_ids', 'Linked artifact ids', 'artifact UUIDs'],
  ['vulnerability_ids', 'Linked vulnerability ids', 'CVE, GHSA or OSV ids; the linked findings follow them'],
  ['device_names', 'Linked device names', 'device names'],
  ['group_ids', 'Linked group ids', 'group UUIDs'],
] as const;

/** Title, summary, owner and links of an open or reportable case (PATCH /cases/{id}); the API's field errors shown under the field. */
export function EditCase({ c }: { c: Case }) {
  const edit = useCaseWrite(c.id, (body: CaseUpdate) => ok(api.PATCH('/api/v1/cases/{id}', { params: { path: { id: c.id } }, body })));
  const editable = c.state === 'open' || c.state === 'reportable';
  const field = erroredField(edit.error);
  const errorOf = (name: string) => (name === field && edit.error instanceof Error ? edit.error.message : undefined);
  const described = (name: string, fid: string) => (name === field ? { 'aria-invalid': true, 'aria-describedby': fieldErrorId(fid) } : {});
  const submit = (e: FormEvent<HTMLFormElement>) => {
    e.preventDefault();
    const d = new FormData(e.currentTarget);
    const text = (k: string) => String(d.get(k) ?? '').trim();
    const list = (k: string) =>
      text(k)
        .split(/[\s,]+/)
        .filter((v) => v !== '');
    edit.mutate({
      title: text('title'),
      summary: text('summary'),
      owner: text('owner'),
      products: list('products'),
      artifact_ids: list('artifact_ids'),
      vulnerability_ids: list('vulnerability_ids'),
      device_names: list('device_names'),
      group_ids: list('group_ids'),
    });
  };
  return (
    <section aria-labelledby="edit-h">
      <h2 id="edit-h">Edit the case</h2>
      {!editable && <p className="muted">A {words(c.state)} case cannot be changed; reopen it first.</p>}
      <Guard perm="evidence.write" legend="Title, owner, products and links">
        <form className="filters" onSubmit={submit} key={c.updated_at}>
          <Field label="Case title" error={errorOf('title')}>
            {(fid) => <input id={fid} name="title" required defaultValue={c.title} disabled={!editable} className="wide" {...described('title', fid)} />}
          </Field>
          <Field label="Case owner" error={errorOf('owner')}>
            {(fid) => <input id={fid} name="owner" required defaultValue={c.owner} disabled={!editable} {...described('owner', fid)} />}
          </Field>
          <Field label="Case summary" error={errorOf('summary')}>
            {(fid) => (
              <textarea id={fid} name="summary" rows={2} defaultValue={c.summary} disabled={!editable} className="wide" {...described('summary', fid)} />
            )}
          </Field>
          {EDITABLE_LISTS.map(([name, label, hint]) => (
            <Field key={name} label={label} hint={`${hint}, separated by spaces or commas`} error={errorOf(name)}>
              {(fid) => <input id={fid} name={name} defaultValue={c[name].join(' ')} disabled={!editable} className="wide" {...described(name, fid)} />}
            </Field>
          ))}
          <button type="submit" disabled={!editable || edit.isPending}>
            Save changes
          </button>
        </form>
        {edit.error !== null && field === undefined && <ErrorNote error={edit.error} />}
        {edit.isSuccess && !edit.isPending && <p role="status">Saved.</p>}
      </Guard>
    </section>
  );
}
