import { useQuery } from '@tanstack/react-query';
import { Link, useParams } from 'react-router';
import { caseQueries } from '../../../api/queries/cases';
import { Badge, Download, ErrorNote, Loading, PageTitle, When } from '../../../ui/kit';
import { kindWords } from '../cases';
import { ReportingPlatformPacket } from '../srp-packet';
import { Assessment } from './assessment';
import { Attachments } from './attachments';
import { CaseAudit } from './audit';
import { Awareness } from './awareness';
import { CloseOrReopen } from './close';
import { Deadlines } from './deadlines';
import { EditCase } from './edit';
import { MeasuresAndRequests } from './measures';
import { Submissions } from './submissions';

/** One Article 14 case: its clocks, awareness, assessment, submissions, attachments and export. */
export function CasePage() {
  const id = useParams().id!;
  const c = useQuery({ ...caseQueries.detail(id), refetchInterval: 60_000 });
  const d = c.data;
  return (
    <>
      <PageTitle>{d ? `Case: ${d.title}` : 'Case'}</PageTitle>
      <ErrorNote error={c.error} />
      {c.isPending ? (
        <Loading what="the case" />
      ) : d ? (
        <>
          <dl className="facts">
            <dt>Kind</dt>
            <dd>{kindWords(d.kind)}</dd>
            <dt>State</dt>
            <dd>
              <Badge value={d.state} />
            </dd>
            <dt>Owner</dt>
            <dd>{d.owner}</dd>
            <dt>Products</dt>
            <dd>{d.products.join(', ') || '—'}</dd>
            <dt>Vulnerabilities</dt>
            <dd>
              {d.vulnerability_ids.length === 0
                ? '—'
                : d.vulnerability_ids.map((v) => (
                    <span key={v}>
                      <Link to={`/vulnerabilities/${encodeURIComponent(v)}`}>{v}</Link>{' '}
                    </span>
                  ))}
            </dd>
            <dt>Aware since</dt>
            <dd>
              <When at={d.aware_at} />
              {d.awareness && d.awareness.corrections > 0 && <span className="muted"> ({d.awareness.corrections} corrections)</span>}
            </dd>
            <dt>Corrective measure available</dt>
            <dd>
              <When at={d.corrective_measure_at} />
            </dd>
            <dt>Summary</dt>
            <dd>{d.summary || '—'}</dd>
          </dl>
          <p>
            <Download href={`/api/v1/cases/${id}/export`}>Evidence archive (tar, signed manifest)</Download>
          </p>
          <EditCase c={d} />
          <Deadlines c={d} fetchedAt={c.dataUpdatedAt} />
          <Assessment c={d} />
          <Awareness c={d} />
          <MeasuresAndRequests c={d} />
          <Submissions c={d} />
          <ReportingPlatformPacket caseId={id} editable={d.state === 'open' || d.state === 'reportable'} />
          <Attachments caseId={id} />
          <CloseOrReopen c={d} />
          <CaseAudit caseId={id} />
        </>
      ) : null}
    </>
  );
}
