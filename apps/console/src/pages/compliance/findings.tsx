import { keepPreviousData, useQuery } from '@tanstack/react-query';
import { Link } from 'react-router';
import { findingQueries } from '../../api/queries/findings';
import { Badge, FixedIn, Mono, PageTitle, Paged, SearchBox, Select, useListParams } from '../../ui/kit';
import { SEVERITIES, VEX_STATUSES, isSeverity, isVexStatus } from './common';

const YES_NO: readonly (readonly [string, string])[] = [
  ['', 'either'],
  ['true', 'yes'],
  ['false', 'no'],
];

/** Findings (`GET /findings`): known exploited first, filtered and paged by the server, counts by severity. */
export function FindingsPage() {
  const list = useListParams();
  const severity = list.get('severity');
  const vex = list.get('vex_status');
  const kev = list.get('known_exploited');
  const open = list.get('open');
  const vulnerability = list.get('vulnerability');
  const product = list.get('product');
  const query = {
    limit: list.limit,
    offset: list.offset,
    ...(isSeverity(severity) ? { severity } : {}),
    ...(isVexStatus(vex) ? { vex_status: vex } : {}),
    ...(kev ? { known_exploited: kev === 'true' } : {}),
    ...(open ? { open: open === 'true' } : {}),
    ...(vulnerability ? { vulnerability } : {}),
    ...(product ? { product } : {}),
  };
  const findings = useQuery({
    ...findingQueries.list(query),
    placeholderData: keepPreviousData,
  });
  const counts = findings.data?.counts;
  return (
    <>
      <PageTitle>Findings</PageTitle>
      <div className="filters" role="search">
        <Select
          label="Severity at or above"
          value={severity}
          options={[['', 'any'], ...SEVERITIES.map((s) => [s, counts ? `${s} (${counts[s]})` : s] as const)]}
          onChange={(v) => list.set({ severity: v })}
        />
        <Select label="Known exploited" value={kev} options={YES_NO} onChange={(v) => list.set({ known_exploited: v })} />
        <Select label="Open" value={open} options={YES_NO} onChange={(v) => list.set({ open: v })} />
        <Select
          label="VEX status"
          value={vex}
          options={[['', 'any'], ...VEX_STATUSES.map((s) => [s, s.replace(/_/g, ' ')] as const)]}
          onChange={(v) => list.set({ vex_status: v })}
        />
        <SearchBox label="Vulnerability id" value={vulnerability} onSearch={(v) => list.set({ vulnerability: v })} />
        <SearchBox label="Product" value={product} onSearch={(v) => list.set({ product: v })} />
      </div>
      {counts && (
        <p className="muted" aria-live="polite">
          By severity: {SEVERITIES.map((s) => `${counts[s].toLocaleString()} ${s}`).join(' · ')}
        </p>
      )}
      <Paged
        what="findings"
        result={findings}
        list={list}
        caption="Findings, known exploited first"
        head={['Vulnerability', 'Severity', 'Known exploited', 'Artifact', 'Component', 'Fixed in', 'VEX', 'State']}
      >
        {(page) =>
          page.findings.map((f) => (
            <tr key={f.id}>
              <td>
                <Link to={`/vulnerabilities/${encodeURIComponent(f.vulnerability)}`}>{f.vulnerability}</Link>
                {f.summary && <div className="muted">{f.summary}</div>}
              </td>
              <td>
                <Badge value={f.severity} /> {f.cvss_score !== null && <span className="muted">CVSS {f.cvss_score}</span>}
              </td>
              <td>{f.known_exploited ? <Badge value="known exploited" /> : 'no'}</td>
              <td>
                <Link to={`/artifacts/${f.artifact.id}/vex`}>
                  {f.artifact.name} {f.artifact.version}
                </Link>
              </td>
              <td>
                <Mono>{f.component.purl}</Mono>
              </td>
              <FixedIn finding={f} />
              <td>{f.vex.status ? f.vex.status.replace(/_/g, ' ') : '—'}</td>
              <td>{f.open ? 'open' : 'closed'}</td>
            </tr>
          ))
        }
      </Paged>
    </>
  );
}
