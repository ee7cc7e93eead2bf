import { keepPreviousData, useQuery } from '@tanstack/react-query';
import { Link, useParams } from 'react-router';
import { transactionQueries } from '../api/queries/transactions';
import { Badge, Download, ErrorNote, Loading, Mono, Paged, Pager, PageTitle, ShortId, Table, useListParams, When } from '../ui/kit';
import { DeviceStates } from './rollout';
import { ReceiptsTable } from './receipts';

export function TransactionsPage() {
  const list = useListParams();
  const query = { limit: list.limit, offset: list.offset };
  const txs = useQuery({
    ...transactionQueries.list(query),
    placeholderData: keepPreviousData,
    refetchInterval: 5_000,
  });
  return (
    <>
      <PageTitle>Release transactions</PageTitle>
      <Paged what="transactions" result={txs} list={list} head={['Transaction', 'State', 'Members', 'Devices', 'Started']}>
        {(t) =>
          t.release_transactions.map((tx) => (
            <tr key={tx.id}>
              <td>
                <Link to={`/transactions/${tx.id}`}>
                  <Mono>{tx.id.slice(0, 8)}</Mono>
                </Link>
              </td>
              <td>
                <Badge value={tx.state} />
              </td>
              <td>{tx.members.map((m) => m.component).join(', ')}</td>
              <td>{typeof tx.devices === 'number' ? tx.devices : JSON.stringify(tx.devices)}</td>
              <td>
                <When at={tx.created_at} />
              </td>
            </tr>
          ))
        }
      </Paged>
    </>
  );
}

type Row = Record<string, unknown>;
const rows = (v: unknown): Row[] => (Array.isArray(v) ? v.filter((x): x is Row => typeof x === 'object' && x !== null) : []);
const text = (v: unknown) => (v === null || v === undefined ? '—' : typeof v === 'object' ? JSON.stringify(v) : String(v));

/** A release transaction: members in activation order, device states, the per-device result manifest. */
export function TransactionPage() {
  const id = useParams().id!;
  const list = useListParams();
  const query = { limit: list.limit, offset: list.offset };
  const tx = useQuery({
    ...transactionQueries.detail(id, query),
    placeholderData: keepPreviousData,
    refetchInterval: (q) => (q.state.data?.state === 'running' ? 2_000 : false),
  });
  const settled = tx.data !== undefined && tx.data.state !== 'running';
  // the result manifest is only final once the transaction settles
  const result = useQuery({
    ...transactionQueries.result(id, tx.data?.state),
    enabled: tx.data !== undefined,
  });
  const t = tx.data;
  const devices = rows((result.data as Row | undefined)?.['devices']);
  return (
    <>
      <PageTitle>Release transaction</PageTitle>
      <ErrorNote error={tx.error} />
      {tx.isPending ? (
        <Loading what="the transaction" />
      ) : t ? (
        <>
          <dl className="facts">
            <dt>Id</dt>
            <dd>
              <Mono>{t.id}</Mono>
            </dd>
            <dt>State</dt>
            <dd aria-live="polite">
              <Badge value={t.state} />
            </dd>
            <dt>Group snapshot</dt>
            <dd>
              <ShortId value={t.snapshot_digest} label="snapshot digest" full />
            </dd>
            <dt>Started</dt>
            <dd>
              <When at={t.created_at} />
            </dd>
          </dl>
          <section aria-labelledby="tx-members-h">
            <h2 id="tx-members-h">Members in activation order</h2>
            <ol>
              {[...t.members]
                .sort((a, b) => a.position - b.position)
                .map((m) => (
                  <li key={m.rollout_id}>
                    <Link to={`/rollouts/${m.rollout_id}`}>{m.component}</Link> (group {m.group}) <ShortId value={m.digest} />
                  </li>
                ))}
            </ol>
          </section>
          <section aria-labelledby="tx-devices-h">
            <h2 id="tx-devices-h">Devices</h2>
            <DeviceStates rows={t.device_states} />
            <Pager
              label="devices"
              total={typeof t.devices === 'number' ? t.devices : t.device_states.length}
              offset={list.offset}
              limit={list.limit}
              onPage={(offset) => list.set({ offset })}
            />
          </section>
          <section aria-labelledby="tx-result-h">
            <h2 id="tx-result-h">Result manifest{settled ? '' : ' (so far)'}</h2>
            <ErrorNote error={result.error} />
            <Table head={['Device', 'State', 'Members']}>
              {devices.map((d) => (
                <tr key={text(d['device'])}>
                  <td>{text(d['device'])}</td>
                  <td>
                    <Badge value={text(d['state'])} />
                  </td>
                  <td>
                    {rows(d['members'])
                      .map((m) => `${text(m['component'])} #${text(m['position'])} ${text(m['verdict'])}`)
                      .join(', ')}
                  </td>
                </tr>
              ))}
            </Table>
          </section>
          <section aria-labelledby="tx-receipts-h">
            <h2 id="tx-receipts-h">Receipts</h2>
            <ReceiptsTable filter={{ transaction_id: t.id }} prefix="receipts." />
            <Download href={`/api/v1/release-receipts/export?transaction_id=${t.id}`}>Download receipts of this transaction (.tar)</Download>
          </section>
        </>
      ) : null}
    </>
  );
}
