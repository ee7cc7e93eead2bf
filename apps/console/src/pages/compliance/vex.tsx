import { keepPreviousData, useMutation, useQuery, useQueryClient } from '@tanstack/react-query';
import { useParams } from 'react-router';
import { rawWrite } from '../../api/client';
import { artifactQueries } from '../../api/queries/artifacts';
import { Download, ErrorNote, Field, Guard, Loading, Mono, PageTitle, Paged, SearchBox, When, useListParams } from '../../ui/kit';

const VEX_TYPES = { openvex: 'application/openvex+json', cyclonedx: 'application/vnd.cyclonedx+json' } as const;
/** The formats of a product's VEX export (GET /products/{product}/vex?format=). */
const EXPORTS = [
  ['csaf', 'CSAF 2.0 VEX'],
  ['openvex', 'OpenVEX'],
  ['cyclonedx', 'CycloneDX VEX'],
] as const;

/** Downloads of the VEX of each product whose releases name the artifact. */
function ProductExports({ products }: { products: readonly string[] }) {
  if (products.length === 0) return <p>No release names this artifact yet: a product&apos;s VEX export covers the artifacts of its releases.</p>;
  return (
    <section aria-label="VEX exports">
      <h2>VEX exports</h2>
      <ul className="plain">
        {products.map((p) => (
          <li key={p}>
            Product <Mono>{p}</Mono>:{' '}
            {EXPORTS.map(([format, label]) => (
              <span key={format}>
                <Download href={`/api/v1/products/${encodeURIComponent(p)}/vex?format=${format}`}>{label}</Download>{' '}
              </span>
            ))}
          </li>
        ))}
      </ul>
    </section>
  );
}

/** An artifact's VEX statements (newest first, paged) and attaching a VEX document. */
export function VexPage() {
  const id = useParams().id!;
  const list = useListParams();
  const client = useQueryClient();
  const vulnerability = list.get('vulnerability');
  const artifact = useQuery(artifactQueries.detail(id));
  const query = { limit: list.limit, offset: list.offset, ...(vulnerability ? { vulnerability } : {}) };
  const statements = useQuery({
    ...artifactQueries.vex(id, query),
    placeholderData: keepPreviousData,
  });
  const attach = useMutation({
    mutationFn: async (file: File) => {
      const text = await file.text();
      const type = /"bomFormat"/.test(text) ? VEX_TYPES.cyclonedx : VEX_TYPES.openvex;
      return rawWrite('post', '/api/v1/artifacts/{id}/vex', { params: { path: { id } }, body: text, mediaType: type });
    },
    onSuccess: () => client.invalidateQueries({ queryKey: artifactQueries.keys.vex(id) }),
  });
  const a = artifact.data;
  return (
    <>
      <PageTitle>VEX statements</PageTitle>
      <ErrorNote error={artifact.error} />
      {artifact.isPending ? (
        <Loading what="the artifact" />
      ) : a ? (
        <p>
          Artifact {a.name} {a.version} <Mono>{a.digest}</Mono>
        </p>
      ) : null}
      {statements.data && <ProductExports products={statements.data.products} />}
      <Guard perm="evidence.write" legend="Attach a VEX document">
        <Field label="VEX document (OpenVEX or CycloneDX JSON)">
          {(fid) => <input id={fid} type="file" accept=".json,application/json" onChange={(e) => e.target.files?.[0] && attach.mutate(e.target.files[0])} />}
        </Field>
        <ErrorNote error={attach.error} />
        {attach.data && (
          <p role="status">
            Recorded {attach.data.statements.length} statements; {attach.data.findings_applied} findings updated.
          </p>
        )}
      </Guard>
      <div className="filters" role="search">
        <SearchBox label="Vulnerability id" value={vulnerability} onSearch={(v) => list.set({ vulnerability: v })} />
      </div>
      <Paged what="statements" result={statements} list={list} head={['Vulnerability', 'Status', 'Justification', 'Component', 'Format', 'Stated', 'By']}>
        {(page) =>
          page.statements.map((s) => (
            <tr key={s.id}>
              <td>{s.vulnerability}</td>
              <td>{s.status.replace(/_/g, ' ')}</td>
              <td>{s.justification ?? s.impact_statement ?? '—'}</td>
              <td>{s.component ?? '—'}</td>
              <td>{s.format}</td>
              <td>
                <When at={s.statement_at} />
              </td>
              <td>{s.actor}</td>
            </tr>
          ))
        }
      </Paged>
    </>
  );
}
