import { keepPreviousData, useMutation, useQuery, useQueryClient } from '@tanstack/react-query';
import { useState, type FormEvent } from 'react';
import { Link } from 'react-router';
import { ApiError, RETURN_REPRESENTATION, api, describe, ok, rawWrite, writeHeaders, type Schema, type paths } from '../api/client';
import { artifactQueries } from '../api/queries/artifacts';
import { useCan } from '../api/session';
import { Download, ErrorNote, Field, Guard, Paged, PageTitle, SearchBox, Select, ShortId, useListParams, useWrite } from '../ui/kit';

type Artifact = Schema<'/api/v1/artifacts', 'post', 201>;
type ListQuery = NonNullable<paths['/api/v1/artifacts']['get']['parameters']['query']>;
type Severity = NonNullable<ListQuery['severity']>;
type Kind = NonNullable<ListQuery['kind']>;
// Records over the generated unions: the compiler fails when the API gains a kind or severity.
const SEVERITY_SET: Record<Severity, true> = { critical: true, high: true, medium: true, low: true, none: true, unknown: true };
const KIND_SET: Record<Kind, true> = {
  container: true,
  model: true,
  config: true,
  'service-binary': true,
  'os-bundle': true,
  'maintenance-window': true,
  'min-agent': true,
  compose: true,
  'os-package': true,
  'package-manager': true,
};
const SEVERITIES = Object.keys(SEVERITY_SET) as Severity[];
const KINDS = Object.keys(KIND_SET) as Kind[];
const SBOM_TYPES = { cyclonedx: 'application/vnd.cyclonedx+json', spdx: 'application/spdx+json' } as const;

/**
 * `POST /artifacts` as multipart through XMLHttpRequest, the one browser API that reports
 * upload progress; the file is streamed from disk by the browser, never read into memory.
 */
function upload(form: FormData, onProgress: (fraction: number) => void): Promise<Artifact> {
  return new Promise((resolve, reject) => {
    const xhr = new XMLHttpRequest();
    xhr.open('POST', '/api/v1/artifacts');
    for (const [k, v] of Object.entries(writeHeaders())) xhr.setRequestHeader(k, v);
    xhr.responseType = 'json';
    xhr.upload.onprogress = (e) => e.lengthComputable && onProgress(e.loaded / e.total);
    xhr.onload = () => (xhr.status === 201 ? resolve(xhr.response as Artifact) : reject(new ApiError(xhr.status, describe(xhr.status, xhr.response))));
    xhr.onerror = () => reject(new Error('the upload was interrupted (network error)'));
    xhr.send(form);
  });
}

export function ArtifactsPage() {
  const list = useListParams();
  const client = useQueryClient();
  const kind = list.get('kind') as Kind | '';
  const severity = list.get('severity') as Severity | '';
  const q = list.get('q');
  const query = { limit: list.limit, offset: list.offset, ...(kind ? { kind } : {}), ...(severity ? { severity } : {}), ...(q ? { q } : {}) };
  const artifacts = useQuery({
    ...artifactQueries.list(query),
    placeholderData: keepPreviousData,
  });
  const a = artifacts.data;
  return (
    <>
      <PageTitle>Artifacts</PageTitle>
      <UploadForm onDone={() => void client.invalidateQueries({ queryKey: artifactQueries.keys.lists })} />
      <div className="filters" role="search">
        <Select
          label="Kind"
          value={kind}
          options={[['', 'any kind'], ...KINDS.map((k) => [k, a?.counts[k] !== undefined ? `${k} (${a.counts[k]})` : k] as const)]}
          onChange={(v) => list.set({ kind: v })}
        />
        <Select
          label="Open finding at or above"
          value={severity}
          options={[['', 'any'], ...SEVERITIES.map((s) => [s, s] as const)]}
          onChange={(v) => list.set({ severity: v })}
        />
        <SearchBox label="Name contains" value={q} onSearch={(v: string) => list.set({ q: v })} />
      </div>
      <Paged what="artifacts" result={artifacts} list={list} head={['Name', 'Version', 'Kind', 'Digest', 'Bytes', 'Description', 'SBOM', 'VEX']}>
        {(page) =>
          page.artifacts.map((art) => (
            <tr key={art.id}>
              <td>{art.name}</td>
              <td>{art.version}</td>
              <td>{art.kind}</td>
              <td>
                <ShortId value={art.digest} />
              </td>
              <td>{art.length.toLocaleString()}</td>
              <td>
                <Description artifact={art} />
              </td>
              <td>
                <Sbom artifact={art} />
              </td>
              <td>
                <Link to={`/artifacts/${art.id}/vex`}>
                  VEX
                  <span className="sr-only">
                    {' '}
                    of {art.name} {art.version}
                  </span>
                </Link>
              </td>
            </tr>
          ))
        }
      </Paged>
    </>
  );
}

function UploadForm({ onDone }: { onDone: () => void }) {
  const [progress, setProgress] = useState<number>();
  const send = useMutation({
    mutationFn: (form: FormData) => upload(form, setProgress),
    onSuccess: onDone,
    onSettled: () => setProgress(undefined),
  });
  const submit = (e: FormEvent<HTMLFormElement>) => {
    e.preventDefault();
    const data = new FormData(e.currentTarget);
    // text fields first, then the file (the server reads the parts in order)
    const form = new FormData();
    for (const k of ['name', 'version', 'kind']) form.set(k, String(data.get(k) ?? ''));
    const mediaType = String(data.get('media_type') ?? '');
    if (mediaType) form.set('media_type', mediaType);
    form.set('file', data.get('file') as File);
    setProgress(0);
    send.mutate(form);
  };
  return (
    <Guard perm="artifacts.write" legend="Upload an artifact">
      <form onSubmit={submit} className="filters">
        <Field label="Name">{(id) => <input id={id} name="name" required />}</Field>
        <Field label="Version">{(id) => <input id={id} name="version" required />}</Field>
        <Field label="Kind">
          {(id) => (
            <select id={id} name="kind" required defaultValue="">
              <option value="" disabled>
                choose a kind
              </option>
              {KINDS.map((k) => (
                <option key={k} value={k}>
                  {k}
                </option>
              ))}
            </select>
          )}
        </Field>
        <Field label="Media type (optional)">{(id) => <input id={id} name="media_type" />}</Field>
        <Field label="File">{(id) => <input id={id} name="file" type="file" required />}</Field>
        <button type="submit" className="primary" disabled={send.isPending}>
          Upload
        </button>
      </form>
      {progress !== undefined && (
        <p>
          <label>
            Upload progress <progress max={1} value={progress} /> {Math.round(progress * 100)} %
          </label>
        </p>
      )}
      <ErrorNote error={send.error} />
      {send.data && (
        <p role="status">
          Published {send.data.name} {send.data.version} as <ShortId value={send.data.digest} full />.
        </p>
      )}
    </Guard>
  );
}

function Sbom({ artifact }: { artifact: Schema<'/api/v1/artifacts', 'get'>['artifacts'][number] }) {
  const client = useQueryClient();
  const canWrite = useCan('artifacts.write');
  const attach = useMutation({
    mutationFn: async (file: File) => {
      const text = await file.text();
      const type = /"spdxVersion"/.test(text) ? SBOM_TYPES.spdx : SBOM_TYPES.cyclonedx;
      await rawWrite('put', '/api/v1/artifacts/{id}/sbom', { params: { path: { id: artifact.id } }, body: text, mediaType: type });
    },
    onSuccess: () => client.invalidateQueries({ queryKey: artifactQueries.keys.lists }),
  });
  return (
    <span className="row">
      {artifact.has_sbom && <Download href={`/api/v1/artifacts/${artifact.id}/sbom`}>Download</Download>}
      <label className="button" aria-disabled={!canWrite.ok} title={canWrite.ok ? undefined : canWrite.reason}>
        {artifact.has_sbom ? 'Replace' : 'Attach'}
        <span className="sr-only">
          {' '}
          SBOM of {artifact.name} {artifact.version}
          {canWrite.ok ? '' : ` (${canWrite.reason})`}
        </span>
        <input
          type="file"
          accept=".json,application/json"
          className="sr-only"
          disabled={!canWrite.ok}
          onChange={(e) => e.target.files?.[0] && attach.mutate(e.target.files[0])}
        />
      </label>
      <ErrorNote error={attach.error} />
    </span>
  );
}

/** The artifact's description, edited in place (`PATCH /artifacts/{id}`; the digest and bytes never change). */
function Description({ artifact }: { artifact: Schema<'/api/v1/artifacts', 'get'>['artifacts'][number] }) {
  const canWrite = useCan('artifacts.write');
  const [editing, setEditing] = useState(false);
  const [text, setText] = useState(artifact.description ?? '');
  const save = useWrite(
    () => ok(api.PATCH('/api/v1/artifacts/{id}', { params: { path: { id: artifact.id } }, body: { description: text }, headers: RETURN_REPRESENTATION })),
    artifactQueries.keys.lists,
  );
  if (!editing) {
    return (
      <span className="row">
        <span>{artifact.description ?? <span className="muted">—</span>}</span>
        <button type="button" disabled={!canWrite.ok} title={canWrite.ok ? undefined : canWrite.reason} onClick={() => setEditing(true)}>
          Edit
          <span className="sr-only">
            {' '}
            description of {artifact.name} {artifact.version}
          </span>
        </button>
      </span>
    );
  }
  return (
    <form
      className="row"
      onSubmit={(e) => {
        e.preventDefault();
        save.mutate(undefined, { onSuccess: () => setEditing(false) });
      }}
    >
      <input aria-label={`Description of ${artifact.name} ${artifact.version}`} value={text} onChange={(e) => setText(e.target.value)} />
      <button type="submit" disabled={save.isPending}>
        Save
      </button>
      <button type="button" onClick={() => setEditing(false)}>
        Cancel
      </button>
      <ErrorNote error={save.error} />
    </form>
  );
}
