import { keepPreviousData, useQuery } from '@tanstack/react-query';
import { useState } from 'react';
import { Link, useParams } from 'react-router';
import type { paths } from '../api/client';
import { receiptQueries } from '../api/queries/receipts';
import { Badge, Download, ErrorNote, Field, Loading, Mono, Paged, PageTitle, SearchBox, Select, ShortId, useListParams, When } from '../ui/kit';

type ReceiptQuery = NonNullable<paths['/api/v1/release-receipts']['get']['parameters']['query']>;
type Activation = NonNullable<ReceiptQuery['activation']>;
type Filter = Pick<ReceiptQuery, 'device' | 'transaction_id' | 'rollout_id' | 'activation' | 'label'>;
// a Record over the generated union: the compiler fails when the API gains an activation outcome
const ACTIVATION_SET: Record<Activation, true> = { activated: true, 'rolled-back': true, failed: true };
const ACTIVATIONS = Object.keys(ACTIVATION_SET) as Activation[];

/** Device-signed receipts one at a time (`GET /release-receipts`), paged and filtered by the server. */
export function ReceiptsTable({ filter, prefix = '' }: { filter: Filter; prefix?: string }) {
  const list = useListParams(prefix);
  const query = { limit: list.limit, offset: list.offset, ...filter };
  const receipts = useQuery({
    ...receiptQueries.list(query),
    placeholderData: keepPreviousData,
  });
  return (
    <Paged what="receipts" result={receipts} list={list} head={['Device', 'Transaction', 'Activation', 'Health', 'Key label', 'Accepted', '']}>
      {(page) =>
        page.release_receipts.map((r) => (
          <tr key={r.id}>
            <td>
              <Link to={`/devices/${encodeURIComponent(r.device)}`}>{r.device}</Link>
            </td>
            <td>
              <Link to={`/transactions/${r.transaction_id}`}>
                <Mono>{r.transaction_id.slice(0, 8)}</Mono>
              </Link>
            </td>
            <td>
              <Badge value={r.activation} />
            </td>
            <td>{r.health}</td>
            <td>{r.label}</td>
            <td>
              <When at={r.accepted_at} />
            </td>
            <td>
              <Link to={`/receipts/${r.id}`}>Receipt of {r.device}</Link>
            </td>
          </tr>
        ))
      }
    </Paged>
  );
}

/** Receipts with filters, and the export (a tar of the envelopes as received, with an index). */
export function ReceiptsPage() {
  const list = useListParams();
  const [tx, setTx] = useState('');
  const [since, setSince] = useState('');
  const [until, setUntil] = useState('');
  const activation = list.get('activation') as Activation | '';
  const filter: Filter = {
    ...(list.get('device') ? { device: list.get('device') } : {}),
    ...(list.get('transaction_id') ? { transaction_id: list.get('transaction_id') } : {}),
    ...(list.get('label') ? { label: list.get('label') } : {}),
    ...(activation ? { activation } : {}),
  };
  const exportQuery = new URLSearchParams();
  if (tx) exportQuery.set('transaction_id', tx);
  if (since) exportQuery.set('since', new Date(since).toISOString());
  if (until) exportQuery.set('until', new Date(until).toISOString());
  return (
    <>
      <PageTitle>Receipts</PageTitle>
      <p>
        Each receipt is signed by the device&apos;s own key. The export holds the envelopes as received and an index, to verify offline with{' '}
        <code>svc-release verify-receipt</code> and the device CA.
      </p>
      <div className="filters" role="search">
        <SearchBox label="Device" value={list.get('device')} onSearch={(v) => list.set({ device: v })} />
        <SearchBox label="Transaction id" value={list.get('transaction_id')} onSearch={(v) => list.set({ transaction_id: v })} />
        <Select
          label="Activation"
          value={activation}
          options={[['', 'any'], ...ACTIVATIONS.map((a) => [a, a] as const)]}
          onChange={(v) => list.set({ activation: v })}
        />
        <SearchBox label="Key label" value={list.get('label')} onSearch={(v) => list.set({ label: v })} />
      </div>
      <ReceiptsTable filter={filter} />
      <section aria-labelledby="export-h">
        <h2 id="export-h">Export</h2>
        <div className="filters">
          <Field label="Transaction id (optional)">
            {(id) => <input id={id} value={tx} onChange={(e) => setTx(e.target.value.trim())} className="mono" />}
          </Field>
          <Field label="Since (optional)">{(id) => <input id={id} type="datetime-local" value={since} onChange={(e) => setSince(e.target.value)} />}</Field>
          <Field label="Until (optional)">{(id) => <input id={id} type="datetime-local" value={until} onChange={(e) => setUntil(e.target.value)} />}</Field>
        </div>
        <Download href={`/api/v1/release-receipts/export?${exportQuery.toString()}`}>Download receipt export (.tar)</Download>
      </section>
    </>
  );
}

/**
 * One receipt: what the device signed and what the server could verify of it. The label says
 * how much the signature proves (`software-key`: the device key is held in software).
 */
export function ReceiptPage() {
  const id = useParams().id!;
  const receipt = useQuery(receiptQueries.detail(id));
  const r = receipt.data;
  const v = r?.verification;
  return (
    <>
      <PageTitle>{r ? `Receipt of ${r.device}` : 'Receipt'}</PageTitle>
      <ErrorNote error={receipt.error} />
      {receipt.isPending ? (
        <Loading what="the receipt" />
      ) : r && v ? (
        <>
          <p className={v.verified ? 'good' : 'error'} role="status">
            {v.verified ? 'Signature verified' : `Not verified: ${v.error ?? 'unknown reason'}`} (checked <When at={v.checked_at} />)
          </p>
          <dl className="facts">
            <dt>Device</dt>
            <dd>
              <Link to={`/devices/${encodeURIComponent(r.device)}`}>{r.device}</Link>
            </dd>
            <dt>Key label</dt>
            <dd>{r.label === 'software-key' ? 'software-key (the device key is held in software, not in a secure element)' : r.label}</dd>
            <dt>Device certificate</dt>
            <dd>
              {v.device_certificate ? (
                <>
                  {v.device_certificate.subject_cn}, serial <Mono>{v.device_certificate.serial_number}</Mono>, fingerprint{' '}
                  <Mono>{v.device_certificate.fingerprint}</Mono>, valid <When at={v.device_certificate.not_before} /> to{' '}
                  <When at={v.device_certificate.not_after} />
                </>
              ) : (
                'none found'
              )}
            </dd>
            <dt>Activation</dt>
            <dd>
              <Badge value={r.activation} />
            </dd>
            <dt>Health</dt>
            <dd>{r.health}</dd>
            <dt>Transaction</dt>
            <dd>
              <Link to={`/transactions/${r.transaction_id}`}>{r.transaction_id}</Link>
            </dd>
            <dt>Envelope digest</dt>
            <dd>
              <ShortId value={r.envelope_digest} label="envelope digest" full />
            </dd>
            <dt>Payload digest</dt>
            <dd>
              <ShortId value={r.payload_digest} label="payload digest" full />
            </dd>
            <dt>Accepted</dt>
            <dd>
              <When at={r.accepted_at} />
            </dd>
          </dl>
          <h2>Signed payload</h2>
          <pre className="mono payload">{JSON.stringify(r.payload, null, 2)}</pre>
        </>
      ) : null}
    </>
  );
}
