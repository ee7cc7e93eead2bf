import { keepPreviousData, useMutation, useQuery, useQueryClient } from '@tanstack/react-query';
import { useState } from 'react';
import { Link, useParams } from 'react-router';
import { api, ok } from '../api/client';
import { deviceQueries } from '../api/queries/devices';
import { DeviceDeliveries } from '../ui/delivery';
import { useCan } from '../api/session';
import {
  Badge,
  ConfirmButton,
  Download,
  ErrorNote,
  Field,
  FixedIn,
  Guard,
  Loading,
  Mono,
  Paged,
  PageTitle,
  ShortId,
  Table,
  useListParams,
  When,
} from '../ui/kit';
import { HistoryDetail } from '../ui/event-text';
import { ReceiptsTable } from './receipts';

/** One device: identity, history, log retrieval, receipts, decommission. */
export function DevicePage() {
  const name = useParams().name!;
  const client = useQueryClient();
  const path = { path: { name } };
  const device = useQuery(deviceQueries.detail(name));
  const decommission = useMutation({
    mutationFn: () => ok(api.DELETE('/api/v1/devices/{name}', { params: path })),
    onSuccess: () =>
      client.invalidateQueries({ queryKey: deviceQueries.detail(name).queryKey }).then(() => client.invalidateQueries({ queryKey: deviceQueries.keys.lists })),
  });
  const d = device.data;
  return (
    <>
      <PageTitle>{`Device ${name}`}</PageTitle>
      <ErrorNote error={device.error} />
      {device.isPending ? (
        <Loading what="the device" />
      ) : d ? (
        <>
          <dl className="facts">
            <dt>Status</dt>
            <dd>
              <Badge value={d.status} />
            </dd>
            <dt>Profile</dt>
            <dd>{d.profile ?? '—'}</dd>
            <dt>Agent version</dt>
            <dd>{d.agent_version ?? '—'}</dd>
            <dt>Last seen</dt>
            <dd>
              <When at={d.last_seen} />
            </dd>
            <dt>Certificate fingerprint</dt>
            <dd>{d.cert_fingerprint ? <Mono>{d.cert_fingerprint}</Mono> : '—'}</dd>
            <dt>Enrolled</dt>
            <dd>
              <When at={d.created_at} />
            </dd>
          </dl>
          <section aria-labelledby="inventory-h">
            <h2 id="inventory-h">Inventory</h2>
            <Tags name={name} tags={d.tags} />
            {Object.keys(d.inventory.attributes).length + Object.keys(d.inventory.custom).length === 0 ? (
              <p className="muted">The agent has reported no attributes yet.</p>
            ) : (
              <Table caption="Reported and custom attributes" head={['Attribute', 'Value']}>
                {[
                  ...Object.entries(d.inventory.attributes).map(([k, v]) => [`attributes.${k}`, v] as const),
                  ...Object.entries(d.inventory.custom).map(([k, v]) => [`custom.${k}`, v] as const),
                ].map(([k, v]) => (
                  <tr key={k}>
                    <td>
                      <Mono>{k}</Mono>
                    </td>
                    <td>{v}</td>
                  </tr>
                ))}
              </Table>
            )}
          </section>
          <section aria-labelledby="current-h">
            <h2 id="current-h">Current release</h2>
            {d.current_release === null ? (
              <p className="muted">No activated release receipt from this device yet.</p>
            ) : (
              <>
                <p>
                  <Link to={`/releases?product=${encodeURIComponent(d.current_release.product)}`}>
                    {d.current_release.product} {d.current_release.version}
                  </Link>{' '}
                  — device-signed receipt (key label {d.current_release.label}) accepted <When at={d.current_release.accepted_at} />;{' '}
                  <Link to={`/receipts/${d.current_release.receipt_id}`}>the receipt</Link>,{' '}
                  <Link to={`/transactions/${d.current_release.transaction_id}`}>the transaction</Link>.
                </p>
                <Table head={['Member', 'Resulting digest']} caption="Members of the current release and the digests the receipt names">
                  {d.current_release.members.map((m) => (
                    <tr key={m.component}>
                      <td>{m.component}</td>
                      <td>
                        <ShortId value={m.digest} full />
                      </td>
                    </tr>
                  ))}
                </Table>
              </>
            )}
            {d.software.length > 0 && (
              <>
                <h3>Software by evidence</h3>
                <Table head={['Component', 'Digest', 'Evidence', 'Observed']} caption="What the device runs per component, and on what evidence">
                  {d.software.map((sw) => (
                    <tr key={sw.component}>
                      <td>{sw.component}</td>
                      <td>
                        <ShortId value={sw.digest} />
                      </td>
                      <td>{sw.source === 'receipt' ? 'device-signed (receipt)' : 'device-reported only (legacy status)'}</td>
                      <td>
                        <When at={sw.observed_at} />
                      </td>
                    </tr>
                  ))}
                </Table>
              </>
            )}
          </section>
          <Guard perm="devices.write" legend="Actions">
            <LogRequest name={name} disabled={d.status === 'decommissioned'} />
            <ConfirmButton
              label="Decommission…"
              danger
              disabled={d.status === 'decommissioned'}
              question={`Decommission ${name}? It can no longer check in or receive updates; its history stays.`}
              confirm="Decommission"
              onConfirm={() => decommission.mutate()}
            />
            <ErrorNote error={decommission.error} />
            {decommission.isSuccess && <p role="status">Decommissioned.</p>}
          </Guard>
        </>
      ) : null}
      <Deliveries name={name} />
      <Findings name={name} />
      <History name={name} />
      <section aria-labelledby="receipts-h">
        <h2 id="receipts-h">Receipts</h2>
        <ReceiptsTable filter={{ device: name }} prefix="receipts." />
      </section>
    </>
  );
}

/** The operator's tags: each with a remove button, and a field to add one (`PUT`/`DELETE /devices/{name}/tags/{tag}`). */
function Tags({ name, tags }: { name: string; tags: string[] }) {
  const client = useQueryClient();
  const canWrite = useCan('devices.write');
  const [tag, setTag] = useState('');
  const done = (r: { tags: string[] }) => {
    client.setQueryData(deviceQueries.detail(name).queryKey, (old) => (old ? { ...old, tags: r.tags } : old));
    return client.invalidateQueries({ queryKey: deviceQueries.keys.lists });
  };
  const add = useMutation({
    mutationFn: (t: string) => ok(api.PUT('/api/v1/devices/{name}/tags/{tag}', { params: { path: { name, tag: t } } })),
    onSuccess: async (r) => {
      setTag('');
      await done(r);
    },
  });
  const remove = useMutation({
    mutationFn: (t: string) => ok(api.DELETE('/api/v1/devices/{name}/tags/{tag}', { params: { path: { name, tag: t } } })),
    onSuccess: (r) => {
      add.reset();
      return done(r);
    },
  });
  return (
    <>
      <h3>Tags</h3>
      {tags.length === 0 ? (
        <p className="muted">No tags.</p>
      ) : (
        <ul className="plain row" aria-label="Tags">
          {tags.map((t) => (
            <li key={t}>
              <Badge value={t} />
              {canWrite.ok && (
                <button type="button" className="copy" disabled={remove.isPending} onClick={() => remove.mutate(t)} aria-label={`Remove tag ${t}`}>
                  ×
                </button>
              )}
            </li>
          ))}
        </ul>
      )}
      <Guard perm="devices.write">
        <form
          className="filters"
          onSubmit={(e) => {
            e.preventDefault();
            add.mutate(tag.trim());
          }}
        >
          <Field label="New tag" hint="lowercase letters, digits and . _ : -">
            {(id) => <input id={id} required value={tag} spellCheck={false} onChange={(e) => setTag(e.target.value)} />}
          </Field>
          <button type="submit" disabled={add.isPending}>
            Add tag
          </button>
        </form>
        <ErrorNote error={add.error ?? remove.error} />
      </Guard>
    </>
  );
}

function LogRequest({ name, disabled }: { name: string; disabled: boolean }) {
  const [id, setId] = useState<string>();
  const request = useMutation({
    mutationFn: () => ok(api.POST('/api/v1/devices/{name}/log-requests', { params: { path: { name } } })),
    onSuccess: (r) => setId(r.id),
  });
  const status = useQuery({
    ...deviceQueries.logRequest(name, id),
    refetchInterval: (q) => (q.state.data?.status === 'uploaded' ? false : 2_000),
  });
  const s = status.data?.status;
  return (
    <div className="row">
      <button type="button" disabled={disabled || request.isPending} onClick={() => request.mutate()}>
        Request logs
      </button>
      <span role="status">
        {id === undefined ? '' : s === 'uploaded' ? 'Logs arrived.' : `Requested (${s ?? 'pending'}); they arrive with the device's next check-in.`}
      </span>
      {id !== undefined && s === 'uploaded' && (
        <Download href={`/api/v1/devices/${encodeURIComponent(name)}/log-requests/${id}/download`}>Download logs</Download>
      )}
      <ErrorNote error={request.error ?? status.error} />
    </div>
  );
}

function History({ name }: { name: string }) {
  const list = useListParams('history.');
  const query = { limit: list.limit, offset: list.offset };
  const history = useQuery({
    ...deviceQueries.history(name, query),
    placeholderData: keepPreviousData,
  });
  return (
    <section aria-labelledby="history-h">
      <h2 id="history-h">History</h2>
      <Paged what="events" result={history} list={list} head={['When', 'Event', 'Detail']}>
        {(h) =>
          h.history.map((e, i) => (
            <tr key={`${e.at}-${i}`}>
              <td>
                <When at={e.at} />
              </td>
              <td>{e.event}</td>
              <td>
                <HistoryDetail event={e.event} detail={e.detail} />
              </td>
            </tr>
          ))
        }
      </Paged>
    </section>
  );
}

/** Open findings of what the device runs now (`GET /devices/{name}/findings`), paged by the server. */
function Findings({ name }: { name: string }) {
  const can = useCan('evidence.read');
  const list = useListParams('findings.');
  const query = { limit: list.limit, offset: list.offset };
  const findings = useQuery({
    ...deviceQueries.findings(name, query),
    placeholderData: keepPreviousData,
    enabled: can.ok,
  });
  return (
    <section aria-labelledby="device-findings-h">
      <h2 id="device-findings-h">Open findings</h2>
      {!can.ok ? (
        <p className="reason">{can.reason}</p>
      ) : (
        <Paged what="findings" result={findings} list={list} head={['Vulnerability', 'Severity', 'Known exploited', 'Artifact', 'Component', 'Fixed in']}>
          {(page) =>
            page.findings.map((f) => (
              <tr key={f.id}>
                <td>
                  <Link to={`/vulnerabilities/${encodeURIComponent(f.vulnerability)}`}>{f.vulnerability}</Link>
                </td>
                <td>
                  <Badge value={f.severity} />
                </td>
                <td>{f.known_exploited ? 'yes' : 'no'}</td>
                <td>
                  {f.artifact.name} {f.artifact.version}
                </td>
                <td>
                  <Mono>{f.component.purl}</Mono>
                </td>
                <FixedIn finding={f} />
              </tr>
            ))
          }
        </Paged>
      )}
    </section>
  );
}

/** The last delivery of each member the device was sent: its path and the bytes that crossed the link. */
function Deliveries({ name }: { name: string }) {
  const deliveries = useQuery(deviceQueries.deliveries(name));
  return (
    <section aria-labelledby="device-delivery-h">
      <h2 id="device-delivery-h">Delivery</h2>
      <ErrorNote error={deliveries.error} />
      {deliveries.isPending && <Loading what="the deliveries" />}
      {deliveries.data && <DeviceDeliveries members={deliveries.data.members} />}
    </section>
  );
}
