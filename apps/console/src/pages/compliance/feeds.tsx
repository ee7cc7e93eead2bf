import { keepPreviousData, useMutation, useQuery, useQueryClient } from '@tanstack/react-query';
import { useState, type FormEvent } from 'react';
import { rawWrite } from '../../api/client';
import { feedQueries } from '../../api/queries/vuln-feeds';
import { Badge, ErrorNote, Field, Guard, Loading, Mono, PageTitle, Paged, When, useListParams } from '../../ui/kit';

/** Feed freshness, imports and re-analysis runs (each list paged by the server); importing a feed file. */
export function FeedsPage() {
  const feeds = useQuery({ ...feedQueries.freshness(), refetchInterval: 10_000 });
  const f = feeds.data;
  return (
    <>
      <PageTitle>Vulnerability feeds</PageTitle>
      <ErrorNote error={feeds.error} />
      {feeds.isPending ? (
        <Loading what="feed freshness" />
      ) : f ? (
        <dl className="facts">
          <dt>OSV sources</dt>
          <dd>
            {f.osv.length === 0
              ? 'none imported'
              : f.osv.map((o) => (
                  <div key={o.source}>
                    {o.source}: {o.imports} imports, last <When at={o.last_import_at} />
                  </div>
                ))}
          </dd>
          <dt>Advisories</dt>
          <dd>
            {f.advisories.toLocaleString()} (newest modified <When at={f.newest_modified} />)
          </dd>
          <dt>KEV catalog</dt>
          <dd>
            {f.kev.catalog_version ?? 'not imported'} · {f.kev.entries.toLocaleString()} entries · last import <When at={f.kev.last_import_at} />
          </dd>
        </dl>
      ) : null}
      <ImportForm />
      <section aria-labelledby="imports-h">
        <h2 id="imports-h">Imports</h2>
        <Imports />
      </section>
      <section aria-labelledby="runs-h">
        <h2 id="runs-h">Analysis runs</h2>
        <Runs />
      </section>
    </>
  );
}

function ImportForm() {
  const client = useQueryClient();
  const [kind, setKind] = useState<'osv' | 'kev'>('osv');
  const send = useMutation({
    mutationFn: async ({ file, source }: { file: File; source: string }) => {
      const params = { query: source ? { source } : {} };
      if (kind === 'kev') return rawWrite('post', '/api/v1/vuln-feeds/kev', { params, body: file, mediaType: 'application/json' });
      const type = /\.zip$/i.test(file.name) ? 'application/zip' : /\.t?gz$/i.test(file.name) ? 'application/gzip' : 'application/x-tar';
      return rawWrite('post', '/api/v1/vuln-feeds/osv', { params, body: file, mediaType: type });
    },
    onSuccess: () =>
      client.invalidateQueries({ queryKey: feedQueries.freshness().queryKey }).then(() => client.invalidateQueries({ queryKey: feedQueries.keys.imports })),
  });
  const submit = (e: FormEvent<HTMLFormElement>) => {
    e.preventDefault();
    const data = new FormData(e.currentTarget);
    send.mutate({ file: data.get('file') as File, source: String(data.get('source') ?? '') });
  };
  return (
    <Guard perm="admin.manage" legend="Import a feed file">
      <form className="filters" onSubmit={submit}>
        <Field label="Feed">
          {(id) => (
            <select id={id} value={kind} onChange={(e) => setKind(e.target.value as 'osv' | 'kev')}>
              <option value="osv">OSV (zip, tar or tar.gz)</option>
              <option value="kev">CISA KEV catalog (JSON)</option>
            </select>
          )}
        </Field>
        <Field label="Source (optional)">{(id) => <input id={id} name="source" />}</Field>
        <Field label="Feed file">{(id) => <input id={id} name="file" type="file" required />}</Field>
        <button type="submit" className="primary" disabled={send.isPending}>
          Import
        </button>
      </form>
      <ErrorNote error={send.error} />
      {send.data && (
        <p role="status">
          Imported: {send.data.added} added, {send.data.updated} updated, {send.data.unchanged} unchanged, {send.data.skipped} skipped.
        </p>
      )}
    </Guard>
  );
}

function Imports() {
  const list = useListParams('imports.');
  const query = { limit: list.limit, offset: list.offset };
  const imports = useQuery({
    ...feedQueries.imports(query),
    placeholderData: keepPreviousData,
  });
  return (
    <Paged what="imports" result={imports} list={list} head={['Feed', 'Source', 'State', 'Progress', 'Added', 'Updated', 'Skipped', 'Started', 'Digest']}>
      {(page) =>
        page.imports.map((i) => (
          <tr key={i.id}>
            <td>{i.kind}</td>
            <td>{i.source}</td>
            <td>
              <Badge value={i.state} />
            </td>
            <td>
              {i.entries_done.toLocaleString()} / {i.entries_total.toLocaleString()}
            </td>
            <td>{i.added}</td>
            <td>{i.updated}</td>
            <td>{i.skipped}</td>
            <td>
              <When at={i.started_at} />
            </td>
            <td>
              <Mono>{i.digest.slice(0, 19)}…</Mono>
            </td>
          </tr>
        ))
      }
    </Paged>
  );
}

function Runs() {
  const list = useListParams('runs.');
  const query = { limit: list.limit, offset: list.offset };
  const runs = useQuery({
    ...feedQueries.runs(query),
    placeholderData: keepPreviousData,
    refetchInterval: (q) => (q.state.data?.runs.some((r) => r.state !== 'completed') ? 2_000 : false),
  });
  return (
    <Paged what="runs" result={runs} list={list} head={['Reason', 'State', 'Artifacts', 'Findings added', 'Findings removed', 'Created', 'Completed']}>
      {(page) =>
        page.runs.map((r) => (
          <tr key={r.id}>
            <td>{r.reason}</td>
            <td>
              <Badge value={r.state} />
            </td>
            <td>
              <label>
                <span className="sr-only">Artifacts analysed by run {r.id.slice(0, 8)}</span>
                <progress max={Math.max(1, r.artifacts_total)} value={r.artifacts_done} />
              </label>{' '}
              {r.artifacts_done} / {r.artifacts_total}
            </td>
            <td>{r.findings_added}</td>
            <td>{r.findings_removed}</td>
            <td>
              <When at={r.created_at} />
            </td>
            <td>
              <When at={r.completed_at} />
            </td>
          </tr>
        ))
      }
    </Paged>
  );
}
