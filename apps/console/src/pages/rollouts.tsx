import { keepPreviousData, useMutation, useQuery, useQueryClient } from '@tanstack/react-query';
import { useState, type FormEvent } from 'react';
import { Link, useNavigate } from 'react-router';
import { api, ok, type Schema } from '../api/client';
import { artifactQueries } from '../api/queries/artifacts';
import { groupQueries } from '../api/queries/groups';
import { releaseQueries } from '../api/queries/releases';
import { rolloutQueries } from '../api/queries/rollouts';
import { Badge, ErrorNote, Field, Guard, PageTitle, Paged, Select, When, useListParams } from '../ui/kit';

type Progress = Schema<'/api/v1/rollouts', 'get'>['rollouts'][number]['progress'];

/**
 * Committed, failed and pending devices of a rollout as one bar (a <meter> for screen readers);
 * devices decommissioned while pending (skipped) are finished, and named only when there are some.
 */
export function RolloutProgress({ progress, total }: { progress: Progress; total: number }) {
  const done = progress.committed + progress.rolled_back + progress.failed + progress.skipped;
  const pct = (n: number) => `${total > 0 ? (n / total) * 100 : 0}%`;
  return (
    <span className="progress-cell">
      <span className="bar" aria-hidden="true">
        <span className="bar-ok" style={{ width: pct(progress.committed) }} />
        <span className="bar-bad" style={{ width: pct(progress.failed + progress.rolled_back) }} />
      </span>
      <meter min={0} max={Math.max(1, total)} value={done} aria-label="devices finished" />
      <span>
        {progress.committed} committed, {progress.failed + progress.rolled_back} failed or rolled back,{' '}
        {progress.skipped > 0 && `${progress.skipped} skipped (decommissioned), `}
        {progress.pending + progress.installed} pending of {total}
      </span>
    </span>
  );
}

/** What a rollout rolls out and to whom: `edge-gateway 2.4.0 to eu-gateways`. */
export function rolloutTitle(r: { product: string; version: string; group_name: string }): string {
  return `${r.product} ${r.version} to ${r.group_name}`;
}

const KINDS: readonly (readonly [string, string])[] = [
  ['', 'any kind'],
  ['signed', 'signed'],
  ['legacy', 'legacy'],
];

export function RolloutsPage() {
  const list = useListParams();
  const kind = list.get('kind') as '' | 'signed' | 'legacy';
  const releaseId = list.get('release_id');
  const query = { limit: list.limit, offset: list.offset, ...(kind ? { kind } : {}), ...(releaseId ? { release_id: releaseId } : {}) };
  const rollouts = useQuery({
    ...rolloutQueries.list(query),
    placeholderData: keepPreviousData,
    refetchInterval: 5_000,
  });
  return (
    <>
      <PageTitle>Rollouts</PageTitle>
      <Start releaseId={releaseId} />
      <div className="filters" role="search">
        <Select label="Kind" value={kind} options={KINDS} onChange={(v) => list.set({ kind: v })} />
        {releaseId && (
          <button type="button" onClick={() => list.set({ release_id: undefined, start: undefined })}>
            Show every release&apos;s rollouts
          </button>
        )}
      </div>
      <Paged what="rollouts" result={rollouts} list={list} head={['Rollout', 'Member', 'Kind', 'Status', 'Evidence', 'Progress', 'Started']}>
        {(r) =>
          r.rollouts.map((ro, i) => (
            <tr key={ro.id}>
              <td>
                {/* the members of one transaction are adjacent: its title is written once */}
                {ro.transaction_id !== null && r.rollouts[i - 1]?.transaction_id === ro.transaction_id ? (
                  <span className="muted">same transaction</span>
                ) : (
                  <Link to={`/rollouts/${ro.id}`}>{rolloutTitle(ro)}</Link>
                )}
              </td>
              <td>
                <Link to={`/rollouts/${ro.id}`}>{ro.component}</Link>
              </td>
              <td>{ro.kind}</td>
              <td>
                <Badge value={ro.status} />
              </td>
              <td>{ro.evidence === 'signed-receipt' ? 'device-signed receipts' : 'device-reported only'}</td>
              <td>
                <RolloutProgress progress={ro.progress} total={ro.device_count} />
              </td>
              <td>
                <When at={ro.created_at} />
              </td>
            </tr>
          ))
        }
      </Paged>
    </>
  );
}

/** Start a signed rollout (from a release) or a legacy one (an artifact to a group, with waves). */
function Start({ releaseId }: { releaseId: string }) {
  const navigate = useNavigate();
  const client = useQueryClient();
  const [kind, setKind] = useState<'signed' | 'legacy'>('signed');
  const [release, setRelease] = useState(releaseId);
  const [gate, setGate] = useState('');
  const [artifact, setArtifact] = useState('');
  const [group, setGroup] = useState('');
  const [waves, setWaves] = useState('');
  const releases = useQuery({
    ...releaseQueries.list({ limit: 50 }),
    enabled: kind === 'signed',
  });
  const artifacts = useQuery({
    ...artifactQueries.list({ limit: 50 }),
    enabled: kind === 'legacy',
  });
  const groups = useQuery({
    ...groupQueries.list({ limit: 50 }),
    enabled: kind === 'legacy',
  });
  const start = useMutation({
    mutationFn: () => {
      if (kind === 'signed') {
        const gates = gate
          .split(',')
          .map((s) => s.trim())
          .filter(Boolean)
          .map(Number);
        return ok(api.POST('/api/v1/rollouts', { body: { release_id: release, ...(gates.length > 0 ? { overrides: { require_approval: gates } } : {}) } }));
      }
      // legacy waves: "1, 10, 100!" or "1%, 100%!" (counts or percentages), "!" marks an approval gate
      const parsed = waves
        .split(',')
        .map((s) => s.trim())
        .filter(Boolean)
        .map((w) => {
          const approval = w.endsWith('!');
          const v = approval ? w.slice(0, -1) : w;
          return { ...(v.endsWith('%') ? { percent: Number(v.slice(0, -1)) } : { count: Number(v) }), ...(approval ? { requires_approval: true } : {}) };
        });
      return ok(api.POST('/api/v1/rollouts', { body: { artifact_id: artifact, group_id: group, ...(parsed.length > 0 ? { waves: parsed } : {}) } }));
    },
    onSuccess: (r) => {
      void client.invalidateQueries({ queryKey: rolloutQueries.keys.lists });
      void navigate(`/rollouts/${r.id}`);
    },
  });
  const submit = (e: FormEvent) => {
    e.preventDefault();
    start.mutate();
  };
  return (
    <Guard perm="rollouts.write" legend="Start a rollout">
      <form onSubmit={submit} className="filters">
        <Select
          label="Rollout kind"
          value={kind}
          options={[
            ['signed', 'signed (from a release)'],
            ['legacy', 'legacy (artifact to group)'],
          ]}
          onChange={(v) => setKind(v as 'signed' | 'legacy')}
        />
        {kind === 'signed' ? (
          <>
            <Select
              label="Release"
              value={release}
              options={[['', 'choose a release'], ...(releases.data?.releases ?? []).map((r) => [r.id, `${r.product} ${r.version}`] as const)]}
              onChange={setRelease}
            />
            <Field label="Extra approval gates (wave numbers from 0, comma-separated)">
              {(id) => <input id={id} value={gate} onChange={(e) => setGate(e.target.value)} inputMode="numeric" />}
            </Field>
          </>
        ) : (
          <>
            <Select
              label="Artifact"
              value={artifact}
              options={[['', 'choose an artifact'], ...(artifacts.data?.artifacts ?? []).map((a) => [a.id, `${a.name} ${a.version} (${a.kind})`] as const)]}
              onChange={setArtifact}
            />
            <Select
              label="Group"
              value={group}
              options={[['', 'choose a group'], ...(groups.data?.groups ?? []).map((g) => [g.id, `${g.name} (${g.member_count})`] as const)]}
              onChange={setGroup}
            />
            <Field label="Waves" hint='e.g. "1, 10, 100!" or "1%, 100%!" (device counts or percentages, one kind; "!" = wait for approval)'>
              {(id) => <input id={id} value={waves} onChange={(e) => setWaves(e.target.value)} />}
            </Field>
          </>
        )}
        <button type="submit" className="primary" disabled={start.isPending || (kind === 'signed' ? !release : !artifact || !group)}>
          Start rollout
        </button>
      </form>
      <ErrorNote error={start.error ?? releases.error ?? artifacts.error ?? groups.error} />
    </Guard>
  );
}
