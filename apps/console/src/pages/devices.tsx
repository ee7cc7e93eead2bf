import { keepPreviousData, useQuery } from '@tanstack/react-query';
import { useEffect, useState } from 'react';
import { Link } from 'react-router';
import type { Schema, paths } from '../api/client';
import { Badge, PageTitle, Paged, SearchBox, Select, When, useListParams } from '../ui/kit';
import { deviceQueries } from '../api/queries/devices';
import { useCan } from '../api/session';
import { BulkActions, selectionFilter } from './device-bulk';
import { FilterBox, filterProblem } from './device-filter';

type DeviceStatus = NonNullable<Schema<'/api/v1/devices', 'get'>['devices'][number]['status']>;
type DeviceSort = NonNullable<NonNullable<paths['/api/v1/devices']['get']['parameters']['query']>['sort']>;
// a Record over the generated union: the compiler fails when the API gains an order
const SORT_SET: Record<DeviceSort, true> = { name: true, '-name': true, last_seen: true, '-last_seen': true, status: true, '-status': true };
const isSort = (v: string): v is DeviceSort => v in SORT_SET;
const SORT_COLUMNS = { Name: 'name', Status: 'status', 'Last seen': 'last_seen' } as const;
const SORT_WORDS: Record<string, string> = { name: 'name', status: 'status', last_seen: 'last seen' };
const STATUSES: readonly (readonly [string, string])[] = [
  ['', 'any status'],
  ['online', 'online'],
  ['offline', 'offline'],
  ['decommissioned', 'decommissioned'],
];

/**
 * The device list: status filter, name search, a device filter (docs/device-filter.md) and pages,
 * all answered by the server; devices ticked here, or all the list selects, take a bulk action.
 */
export function DevicesPage() {
  const list = useListParams();
  const status = list.get('status') as DeviceStatus | '';
  const q = list.get('q');
  const filter = list.get('filter');
  const given = list.get('sort');
  const sort: DeviceSort = isSort(given) ? given : 'name';
  // the default order is left out of the request (and the URL): it is the list's fast path
  const query = {
    limit: list.limit,
    offset: list.offset,
    ...(status ? { status } : {}),
    ...(q ? { q } : {}),
    ...(filter ? { filter } : {}),
    ...(sort !== 'name' ? { sort } : {}),
  };
  const sortWords = `${SORT_WORDS[sort.replace(/^-/, '')]}${sort.startsWith('-') ? ', descending' : ''}`;
  const devices = useQuery({
    ...deviceQueries.list(query),
    placeholderData: keepPreviousData,
  });
  const d = devices.data;
  const canWrite = useCan('devices.write');
  const narrowing = selectionFilter(filter, status, q);
  // ticks belong to one narrowing of the list: a new filter starts a new selection
  const [ticked, setTicked] = useState<ReadonlySet<string>>(new Set());
  useEffect(() => setTicked(new Set()), [narrowing]);
  const tick = (name: string, on: boolean) =>
    setTicked((old) => {
      const next = new Set(old);
      if (on) next.add(name);
      else next.delete(name);
      return next;
    });
  const pageNames = d?.devices.map((dev) => dev.name) ?? [];
  const allTicked = pageNames.length > 0 && pageNames.every((n) => ticked.has(n));
  return (
    <>
      <PageTitle>Devices</PageTitle>
      <div className="filters" role="search">
        <Select label="Status" value={status} options={STATUSES} onChange={(v) => list.set({ status: v })} />
        <SearchBox label="Name contains" value={q} onSearch={(v: string) => list.set({ q: v })} />
      </div>
      <FilterBox value={filter} error={devices.error?.message} onApply={(v) => list.set({ filter: v })} />
      {d && (
        <p className="muted" aria-live="polite">
          {d.total.toLocaleString()} matching · {d.counts.online.toLocaleString()} online · {d.counts.offline.toLocaleString()} offline ·{' '}
          {d.counts.decommissioned.toLocaleString()} decommissioned
        </p>
      )}
      {d && <BulkActions filter={narrowing} matching={d.total} selected={[...ticked].sort()} onClear={() => setTicked(new Set())} />}
      {canWrite.ok && pageNames.length > 0 && (
        <label className="row">
          <input
            type="checkbox"
            checked={allTicked}
            onChange={(e) =>
              setTicked((old) => {
                const next = new Set(old);
                for (const n of pageNames)
                  if (e.target.checked) next.add(n);
                  else next.delete(n);
                return next;
              })
            }
          />
          Tick every device on this page
        </label>
      )}
      <Paged
        what="devices"
        // a refused filter is shown by the filter box, at its column; once is enough
        result={filterProblem(devices.error?.message) ? ({ ...devices, error: null } as typeof devices) : devices}
        list={list}
        caption={`Devices, sorted by ${sortWords}`}
        sort={{ columns: SORT_COLUMNS, current: sort, onSort: (v) => list.set({ sort: v === 'name' ? undefined : v }) }}
        head={canWrite.ok ? ['Tick', 'Name', 'Status', 'Profile', 'Agent', 'Last seen'] : ['Name', 'Status', 'Profile', 'Agent', 'Last seen']}
      >
        {(page) =>
          page.devices.map((dev) => (
            <tr key={dev.name}>
              {canWrite.ok && (
                <td>
                  <input type="checkbox" aria-label={`Tick ${dev.name}`} checked={ticked.has(dev.name)} onChange={(e) => tick(dev.name, e.target.checked)} />
                </td>
              )}
              <td>
                <Link to={`/devices/${encodeURIComponent(dev.name)}`}>{dev.name}</Link>
              </td>
              <td>
                <Badge value={dev.status} />
              </td>
              <td>{dev.profile ?? '—'}</td>
              <td>{dev.agent_version ?? '—'}</td>
              <td>
                <When at={dev.last_seen} />
              </td>
            </tr>
          ))
        }
      </Paged>
    </>
  );
}
