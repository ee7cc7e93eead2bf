import { keepPreviousData, useMutation, useQuery, useQueryClient } from '@tanstack/react-query';
import { useState, type DragEvent } from 'react';
import { Link } from 'react-router';
import { api, ok } from '../api/client';
import { authorizerKeyQueries } from '../api/queries/authorizer-keys';
import { releaseQueries } from '../api/queries/releases';
import { useCan, useMe } from '../api/session';
import { ErrorNote, Field, Guard, Mono, Paged, PageTitle, SearchBox, ShortId, useListParams, When } from '../ui/kit';
import type { Verdict } from '../verify/release';

type Loaded = { file: string; envelope: unknown; payload: Awaited<ReturnType<(typeof import('../verify/release'))['decodePayload']>> };

export function ReleasesPage() {
  const list = useListParams();
  const product = list.get('product');
  const query = { limit: list.limit, offset: list.offset, ...(product ? { product } : {}) };
  const releases = useQuery({
    ...releaseQueries.list(query),
    placeholderData: keepPreviousData,
  });
  const canRollOut = useCan('rollouts.write');
  return (
    <>
      <PageTitle>Releases</PageTitle>
      <Submit />
      <div className="filters" role="search">
        <SearchBox label="Product" value={product} onSearch={(v) => list.set({ product: v })} />
      </div>
      <Paged what="releases" result={releases} list={list} head={['Product', 'Version', 'Envelope digest', 'Authorizer key', 'Published', '']}>
        {(r) =>
          r.releases.map((rel) => (
            <tr key={rel.id}>
              <td>{rel.product}</td>
              <td>{rel.version}</td>
              <td>
                <ShortId value={rel.envelope_digest} label="envelope digest" />
              </td>
              <td>
                <Mono>{rel.keyid.slice(0, 16)}</Mono>
              </td>
              <td>
                <When at={rel.created_at} />
              </td>
              <td>
                <Link to={`/rollouts?release_id=${rel.id}`}>Rollouts of {rel.version}</Link>{' '}
                {canRollOut.ok && (
                  <Link className="button" to={`/rollouts?release_id=${rel.id}&start=1`}>
                    Roll out {rel.product} {rel.version}
                  </Link>
                )}
              </td>
            </tr>
          ))
        }
      </Paged>
    </>
  );
}

/** Drop (or pick) a signed envelope, see its payload, verify it here, then submit it byte for byte. */
function Submit() {
  const me = useMe().data;
  const client = useQueryClient();
  const canKeys = useCan('keys.read');
  const keys = useQuery({
    ...authorizerKeyQueries.list({ limit: 200 }),
    enabled: canKeys.ok,
  });
  const [loaded, setLoaded] = useState<Loaded>();
  const [loadError, setLoadError] = useState<string>();
  const [expected, setExpected] = useState('');
  const [verdict, setVerdict] = useState<Verdict>();
  const [over, setOver] = useState(false);
  const submit = useMutation({
    mutationFn: () => ok(api.POST('/api/v1/releases', { body: { envelope: loaded!.envelope as never, expected_product: expected } })),
    onSuccess: () => client.invalidateQueries({ queryKey: releaseQueries.keys.lists }),
  });

  const read = async (file: File) => {
    setVerdict(undefined);
    submit.reset();
    setLoadError(undefined);
    try {
      const envelope: unknown = JSON.parse(await file.text());
      const { decodePayload } = await import('../verify/release');
      const payload = decodePayload(envelope);
      setLoaded({ file: file.name, envelope, payload });
      setExpected(payload?.product ?? '');
    } catch (e) {
      setLoaded(undefined);
      setLoadError(`${file.name}: not a JSON envelope (${e instanceof Error ? e.message : String(e)})`);
    }
  };
  const verify = async () => {
    if (!loaded || !me) return;
    const { verifyInBrowser } = await import('../verify/release');
    const pems = (keys.data?.authorizer_keys ?? []).filter((k) => k.status === 'active').map((k) => k.public_key_pem);
    setVerdict(verifyInBrowser(loaded.envelope, pems, me.tenant_id, expected));
  };
  const onDrop = (e: DragEvent) => {
    e.preventDefault();
    setOver(false);
    const f = e.dataTransfer.files[0];
    if (f) void read(f);
  };
  const p = loaded?.payload;
  return (
    <Guard perm="releases.write" legend="Submit a signed release">
      <div className={`drop${over ? ' over' : ''}`} onDragOver={(e) => (e.preventDefault(), setOver(true))} onDragLeave={() => setOver(false)} onDrop={onDrop}>
        <p>
          Drop a release envelope (<code>*.dsse.json</code> from <code>svc-release sign</code>) here, or
        </p>
        <Field label="Choose an envelope file">
          {(id) => <input id={id} type="file" accept=".json,application/json" onChange={(e) => e.target.files?.[0] && void read(e.target.files[0])} />}
        </Field>
      </div>
      <ErrorNote error={loadError} />
      {loaded && (
        <section aria-labelledby="payload-h">
          <h2 id="payload-h">Payload of {loaded.file}</h2>
          {p === undefined ? (
            <p className="error">The envelope carries no readable payload.</p>
          ) : (
            <dl className="facts">
              <dt>Product</dt>
              <dd>{p.product}</dd>
              <dt>Version</dt>
              <dd>{p.release?.version}</dd>
              <dt>Tenant</dt>
              <dd>
                <Mono>{p.tenant}</Mono>
              </dd>
              <dt>Components</dt>
              <dd>
                <ul className="plain">
                  {(p.components ?? []).map((c) => (
                    <li key={c.name}>
                      {c.name} ({c.kind}) {c.artifact?.name} {c.artifact?.version} <ShortId value={c.digest} /> {c.length?.toLocaleString()} bytes
                    </li>
                  ))}
                </ul>
              </dd>
              <dt>Activation order</dt>
              <dd>{(p.activation?.ordered_groups ?? []).map((g) => g.join(' + ')).join(' → ')}</dd>
              <dt>Target group</dt>
              <dd>
                {p.rollout?.target_group} {p.rollout?.target_policy_digest && <ShortId value={p.rollout.target_policy_digest} label="target policy digest" />}
              </dd>
              <dt>Waves</dt>
              <dd>
                {(p.rollout?.waves ?? [])
                  .map((w, i) => `${w.name ?? `wave ${i + 1}`} (${w.count ?? `${w.percent} %`}${w.requires_approval ? ', approval' : ''})`)
                  .join(', ') || 'one wave'}
              </dd>
              <dt>Profiles</dt>
              <dd>{p.compatibility?.profiles.join(', ')}</dd>
              <dt>Valid</dt>
              <dd>
                {p.validity?.not_before} to {p.validity?.not_after}
              </dd>
            </dl>
          )}
          <div className="filters">
            <Field label="Expected product">
              {(id) => <input id={id} required value={expected} onChange={(e) => (setExpected(e.target.value), setVerdict(undefined))} />}
            </Field>
            <button type="button" onClick={() => void verify()} disabled={!canKeys.ok || keys.isPending}>
              Verify in this browser
            </button>
            <button type="button" className="primary" disabled={verdict?.ok !== true || submit.isPending} onClick={() => submit.mutate()}>
              Submit release
            </button>
          </div>
          {!canKeys.ok && <p className="reason">{canKeys.reason}</p>}
          <div role="status" aria-live="polite">
            {verdict?.ok === true && (
              <p className="good">
                Verified: signed by authorizer key <Mono>{verdict.keyid}</Mono>; payload <Mono>{verdict.payloadDigest}</Mono>, envelope{' '}
                <Mono>{verdict.envelopeDigest}</Mono>.
              </p>
            )}
            {verdict?.ok === false && (
              <p className="error">
                Does not verify: {verdict.code}: {verdict.message}
              </p>
            )}
          </div>
          <ErrorNote error={submit.error} />
          {submit.data && (
            <p role="status">
              Release {submit.data.product} {submit.data.version} published as TUF target <Mono>{submit.data.target}</Mono>.{' '}
              <Link to={`/rollouts?release_id=${submit.data.id}&start=1`}>Start a rollout</Link>
            </p>
          )}
        </section>
      )}
    </Guard>
  );
}
