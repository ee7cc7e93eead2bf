import { keepPreviousData, useQuery } from '@tanstack/react-query';
import { Link } from 'react-router';
import { api, ok, type Schema, type paths } from '../api/client';
import { Badge, PageTitle, Paged, SearchBox, Select, When, useListParams } from '../ui/kit';
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

/** The device list: status filter, name search, a device filter (docs/device-filter.md) and pages, all answered by the server. */
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
    queryKey: ['devices', query],
    queryFn: () => ok(api.GET('/api/v1/devices', { params: { query } })),
    placeholderData: keepPreviousData,
  });
  const d = devices.data;
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
      <Paged
        what="devices"
        // a refused filter is shown by the filter box, at its column; once is enough
        result={filterProblem(devices.error?.message) ? ({ ...devices, error: null } as typeof devices) : devices}
        list={list}
        caption={`Devices, sorted by ${sortWords}`}
        sort={{ columns: SORT_COLUMNS, current: sort, onSort: (v) => list.set({ sort: v === 'name' ? undefined : v }) }}
        head={['Name', 'Status', 'Profile', 'Agent', 'Last seen']}
      >
        {(page) =>
          page.devices.map((dev) => (
            <tr key={dev.name}>
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
