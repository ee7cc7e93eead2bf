import { keepPreviousData, useQuery } from '@tanstack/react-query';
import { useState } from 'react';
import { Link } from 'react-router';
import { ApiError, getJson } from '../api/client';
import { Download, ErrorNote, Field, Loading, PageTitle, Pager, SearchBox, Table, useListParams } from '../ui/kit';

/**
 * `GET /release-receipts` (filters: device, rollout, transaction, activation, label) is read
 * through getJson while the server's OpenAPI document does not list it: the rows are shown
 * field by field as the server sends them, with no response type written here. A server
 * without the route answers 404 "route not found", and the table says so.
 */
type Row = Record<string, unknown>;
interface ReceiptPage {
  receipts?: Row[];
  total?: number;
}
const COLUMNS: readonly (readonly [string, string])[] = [
  ['device', 'Device'],
  ['transaction_id', 'Transaction'],
  ['label', 'Key label'],
  ['verified', 'Verified'],
  ['received_at', 'Received'],
];

function cell(row: Row, key: string) {
  const v = row[key];
  if (key === 'transaction_id' && typeof v === 'string') return <Link to={`/transactions/${v}`}>{v.slice(0, 8)}</Link>;
  if (key === 'device' && typeof v === 'string') return <Link to={`/devices/${encodeURIComponent(v)}`}>{v}</Link>;
  if (typeof v === 'boolean') return v ? 'yes' : 'NO';
  return v === null || v === undefined ? '—' : String(v);
}

export function ReceiptsTable({ filter }: { filter: Record<string, string> }) {
  const list = useListParams();
  const query = new URLSearchParams({ ...filter, limit: String(list.limit), offset: String(list.offset) });
  const receipts = useQuery({
    queryKey: ['receipts', query.toString()],
    queryFn: () => getJson<ReceiptPage>(`/api/v1/release-receipts?${query.toString()}`),
    placeholderData: keepPreviousData,
    retry: false,
  });
  if (receipts.isPending) return <Loading what="receipts" />;
  if (receipts.error instanceof ApiError && receipts.error.status === 404 && /route not found/.test(receipts.error.message)) {
    return <p className="muted">This server does not list receipts one at a time; download them with the receipt export.</p>;
  }
  if (receipts.isError) return <ErrorNote error={receipts.error} />;
  const rows = receipts.data.receipts ?? [];
  return (
    <>
      <Table head={COLUMNS.map(([, label]) => label)}>
        {rows.map((r, i) => (
          <tr key={String(r['id'] ?? i)}>
            {COLUMNS.map(([key]) => (
              <td key={key}>{cell(r, key)}</td>
            ))}
          </tr>
        ))}
      </Table>
      <Pager label="receipts" total={receipts.data.total ?? rows.length} offset={list.offset} limit={list.limit} onPage={(offset) => list.set({ offset })} />
    </>
  );
}

/** Device-signed receipts: listed with filters, and exported as a tar with an index. */
export function ReceiptsPage() {
  const list = useListParams();
  const [tx, setTx] = useState('');
  const [since, setSince] = useState('');
  const [until, setUntil] = useState('');
  const filter: Record<string, string> = {};
  for (const k of ['device', 'transaction_id']) if (list.get(k)) filter[k] = list.get(k);
  const exportQuery = new URLSearchParams();
  if (tx) exportQuery.set('transaction_id', tx);
  if (since) exportQuery.set('since', new Date(since).toISOString());
  if (until) exportQuery.set('until', new Date(until).toISOString());
  return (
    <>
      <PageTitle>Receipts</PageTitle>
      <p>
        Each receipt is signed by the device&apos;s own key; the export holds the envelopes as received, an index, and the device CA to verify them offline with{' '}
        <code>svc-release verify-receipt</code>.
      </p>
      <div className="filters" role="search">
        <SearchBox label="Device" value={list.get('device')} onSearch={(v) => list.set({ device: v })} />
        <SearchBox label="Transaction id" value={list.get('transaction_id')} onSearch={(v) => list.set({ transaction_id: v })} />
      </div>
      <ReceiptsTable filter={filter} />
      <section aria-labelledby="export-h">
        <h2 id="export-h">Export</h2>
        <div className="filters">
          <Field label="Transaction id (optional)">{(id) => <input id={id} value={tx} onChange={(e) => setTx(e.target.value.trim())} className="mono" />}</Field>
          <Field label="Since (optional)">{(id) => <input id={id} type="datetime-local" value={since} onChange={(e) => setSince(e.target.value)} />}</Field>
          <Field label="Until (optional)">{(id) => <input id={id} type="datetime-local" value={until} onChange={(e) => setUntil(e.target.value)} />}</Field>
        </div>
        <Download href={`/api/v1/release-receipts/export?${exportQuery.toString()}`}>Download receipt export (.tar)</Download>
      </section>
    </>
  );
}
