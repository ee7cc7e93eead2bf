/**
 * The readiness report drawn through the branded PDF module: summary figures and coverage
 * chart first, then release adoption, device evidence, SBOM coverage, open findings by
 * severity and age, key hygiene and the open Article 14 cases with their deadlines.
 */
import { plural, shareText, timeText, type BrandedPdf, type PdfTable } from '../../reports/pdf.js';
import { SEVERITIES } from '../vulnerabilities/severity.js';
import { day, SEVERITY_COLORS } from './document.js';
import type { CaseSection, ReadinessReport } from './readiness.js';

const AGE_COLORS = ['#bfdbfe', '#60a5fa', '#2563eb', '#1e3a8a'];

/** `3d 4h`, `5h 10m`; negative durations are overdue. */
export function durationText(seconds: number): string {
  const s = Math.abs(seconds);
  const d = Math.floor(s / 86_400);
  const h = Math.floor((s % 86_400) / 3600);
  const m = Math.floor((s % 3600) / 60);
  const text = d > 0 ? `${d}d ${h}h` : h > 0 ? `${h}h ${m}m` : `${m}m`;
  return seconds < 0 ? `overdue ${text}` : text;
}

function deadlineRemaining(d: CaseSection['deadlines'][number]): string {
  if (d.met_at !== null) return `met ${day(d.met_at)}`;
  if (d.remaining_seconds !== null) return durationText(d.remaining_seconds);
  if (d.waiting_for !== null) return `waiting for ${d.waiting_for.replace('_', ' ')}`;
  return '-';
}

export async function drawReadinessReport(r: ReadinessReport, pdf: BrandedPdf): Promise<void> {
  const tz = pdf.branding.timeZone;
  const e = r.evidence;
  const sig = r.keys.signing_repository;
  const activeCases = r.cases.counts.open + r.cases.counts.reportable;
  pdf.heading('Summary');
  pdf.note(
    `Scope: ${r.report.scope.product === null ? 'all products' : `product ${r.report.scope.product} (keys and the signing repository are the tenant's)`}.`,
  );
  pdf.figures([
    ['Devices in scope (not decommissioned)', String(e.devices)],
    ['Fleet: online / offline / decommissioned', `${r.fleet.online} / ${r.fleet.offline} / ${r.fleet.decommissioned}`],
    ['Devices with a device-signed receipt for their current state', shareText(e.receipt, e.devices)],
    ['Products', String(r.products.length)],
    ['Artifacts with an SBOM', shareText(r.sboms.with_sbom, r.sboms.artifacts)],
    ['Open findings', String(r.findings.open)],
    ['Active authorizer keys', String(r.keys.authorizer.active)],
    [
      'Signing repository root',
      sig.root === null
        ? 'no repository'
        : `version ${sig.root.version}, expires ${timeText(sig.roles.find((x) => x.role === 'root')?.expires_at ?? null, tz)}`,
    ],
    ['Open Article 14 cases', String(activeCases)],
  ]);
  pdf.coverage('Evidence coverage', [
    { label: 'Devices with receipt evidence', part: e.receipt, whole: e.devices },
    ...r.products.map((p) => ({ label: `${p.product} on ${p.latest_release.version}`, part: p.on_latest, whole: p.devices })),
    { label: 'Artifacts with an SBOM', part: r.sboms.with_sbom, whole: r.sboms.artifacts },
    { label: 'Released artifacts with an SBOM', part: r.sboms.released.with_sbom, whole: r.sboms.released.artifacts },
  ]);

  pdf.heading('Release adoption');
  if (r.products.length === 0) pdf.note('No release has been published.');
  else {
    const t = pdf.table([
      { header: 'Product', share: 0.2 },
      { header: 'Newest release', share: 0.16 },
      { header: 'Published', share: 0.12 },
      { header: 'Devices', share: 0.1, align: 'right' },
      { header: 'On newest release', share: 0.21 },
      { header: 'With receipt evidence', share: 0.21 },
    ]);
    for (const p of r.products)
      t.row([
        p.product,
        `${p.latest_release.version} (${plural(p.releases, 'release')})`,
        day(p.latest_release.created_at),
        String(p.devices),
        shareText(p.on_latest, p.devices),
        shareText(p.with_receipt, p.devices),
      ]);
    t.end();
  }
  pdf.note(
    'Devices of a product: devices (not decommissioned) running an artifact named by any of its releases. On the newest release: running, for every component of the newest release, the artifact it names.',
  );

  pdf.heading('Device evidence');
  pdf.figures([
    ['Device-signed receipts (every component)', shareText(e.receipt, e.devices)],
    ...Object.entries(e.labels).map(([label, n]): [string, string] => [`  labelled ${label}`, String(n)]),
    ['Legacy device-reported status (some component)', shareText(e.legacy, e.devices)],
    ['Nothing recorded', shareText(e.none, e.devices)],
  ]);
  pdf.stackedBars(
    'Current state evidenced by',
    [
      { name: 'device-signed receipt', color: pdf.branding.accentColor },
      { name: 'legacy status', color: '#f59e0b' },
      { name: 'nothing recorded', color: '#d1d5db' },
    ],
    [{ label: 'devices', values: [e.receipt, e.legacy, e.none] }],
  );
  pdf.note(
    'Receipts are signed with a software-held device key and labelled software-key; a hardware-backed label is never inferred from it. Legacy status is reported by the device and is not upgraded by the authenticated transport.',
  );

  pdf.heading('SBOM coverage');
  pdf.figures([
    ['Artifacts', String(r.sboms.artifacts)],
    ['With an SBOM', String(r.sboms.with_sbom)],
    ['Without an SBOM', String(r.sboms.without_sbom)],
    ['Released artifacts with an SBOM', shareText(r.sboms.released.with_sbom, r.sboms.released.artifacts)],
    ['Run by devices without an SBOM', String(r.sboms.running_without_sbom.total)],
  ]);
  if (r.sboms.by_kind.length > 0) {
    const t = pdf.table([
      { header: 'Kind', share: 0.28 },
      { header: 'Artifacts', share: 0.18, align: 'right' },
      { header: 'With SBOM', share: 0.18, align: 'right' },
      { header: 'Released', share: 0.18, align: 'right' },
      { header: 'Released with SBOM', share: 0.18, align: 'right' },
    ]);
    for (const k of r.sboms.by_kind) t.row([k.kind, String(k.artifacts), String(k.with_sbom), String(k.released), String(k.released_with_sbom)]);
    t.end();
  }
  if (r.sboms.running_without_sbom.artifacts.length > 0) {
    const t = pdf.table([
      { header: 'Run without an SBOM (most-run first)', share: 0.6 },
      { header: 'Version', share: 0.25 },
      { header: 'Devices', share: 0.15, align: 'right' },
    ]);
    for (const a of r.sboms.running_without_sbom.artifacts) t.row([a.name, a.version, String(a.devices)]);
    t.end();
    if (r.sboms.running_without_sbom.total > r.sboms.running_without_sbom.artifacts.length) {
      pdf.note(`and ${r.sboms.running_without_sbom.total - r.sboms.running_without_sbom.artifacts.length} more (see the JSON twin's total).`);
    }
  }

  pdf.heading('Open findings by severity and age');
  const buckets = r.findings.age_buckets;
  pdf.stackedBars(
    'Open findings (days since first seen)',
    buckets.map((name, i) => ({ name, color: AGE_COLORS[i] ?? '#1e3a8a' })),
    SEVERITIES.map((s) => ({ label: s, values: r.findings.by_severity[s] })),
  );
  const ages = pdf.table([
    { header: 'Severity', share: 0.2 },
    ...buckets.map((b) => ({ header: b, share: 0.14, align: 'right' as const })),
    { header: 'Total', share: 0.24, align: 'right' },
  ]);
  for (const s of SEVERITIES) {
    const row = r.findings.by_severity[s];
    ages.row([s, ...row.map(String), String(row.reduce((a, b) => a + b, 0))], row.some((x) => x > 0) ? { color: SEVERITY_COLORS[s] } : {});
  }
  ages.end();
  pdf.figures([
    ['Open findings', String(r.findings.open)],
    ['Oldest open finding first seen', timeText(r.findings.oldest_open_first_seen_at, tz)],
  ]);

  pdf.heading('Key hygiene');
  const a = r.keys.authorizer;
  pdf.figures([
    ['Active authorizer keys', String(a.active)],
    ['Revoked authorizer keys', String(a.revoked)],
    ['Registered in the last 365 days', String(a.registered_last_365_days)],
    ['Rotations (revocations) in the last 365 days', String(a.revoked_last_365_days)],
    ['Oldest active key registered', timeText(a.oldest_active_registered_at, tz)],
    ['Last rotation', a.last_revoked_at === null ? 'never' : timeText(a.last_revoked_at, tz)],
  ]);
  let keys: PdfTable | null = null;
  for await (const k of a.keys) {
    // the key id (64 hex digits) on the row's full-width line: never broken inside a column
    keys ??= pdf.table([
      { header: 'Authorizer key', share: 0.4 },
      { header: 'Registered', share: 0.2 },
      { header: 'Revoked', share: 0.2 },
      { header: 'Age (days)', share: 0.2, align: 'right' },
    ]);
    keys.row([k.name, day(k.registered_at), k.revoked_at === null ? 'active' : day(k.revoked_at), String(k.age_days)], { detail: `Key id ${k.keyid}` });
  }
  keys?.end();
  if (sig.roles.length > 0) {
    const t = pdf.table([
      { header: 'Signing repository role', share: 0.3 },
      { header: 'Version', share: 0.15, align: 'right' },
      { header: 'Expires', share: 0.35 },
      { header: 'Days left', share: 0.2, align: 'right' },
    ]);
    for (const x of sig.roles) t.row([x.role, String(x.version), timeText(x.expires_at, tz), String(x.days_left)], x.days_left < 0 ? { color: '#991b1b' } : {});
    t.end();
    pdf.note(
      'Days left: whole days until the role expires, rounded down; 0 means it expires within the next 24 hours (normal for the timestamp role, which the server re-signs before it expires), a negative number that it has expired.',
    );
  }
  if (sig.root !== null) {
    pdf.figures([
      ['Root version', String(sig.root.version)],
      ['Root rotations', String(sig.root.rotations)],
      ['Root keys / threshold', `${sig.root.keys ?? '-'} / ${sig.root.threshold ?? '-'}`],
      [
        'Root private key',
        sig.root.key_on_server === null ? 'unknown' : sig.root.key_on_server ? 'on the server (export it for offline custody)' : 'offline (not on the server)',
      ],
    ]);
  } else pdf.note('The signing repository of this tenant has not been created yet (it is created with the first publication).');

  pdf.heading('Article 14 cases');
  pdf.figures([
    ['Open (being assessed)', String(r.cases.counts.open)],
    ['Reportable', String(r.cases.counts.reportable)],
    ['Not reportable', String(r.cases.counts.not_reportable)],
    ['Closed', String(r.cases.counts.closed)],
  ]);
  let cases: PdfTable | null = null;
  for await (const c of r.cases.active) {
    cases ??= pdf.table([
      { header: 'Case', share: 0.34 },
      { header: 'Obligation', share: 0.16 },
      { header: 'Due', share: 0.2 },
      { header: 'Status', share: 0.12 },
      { header: 'Remaining', share: 0.18 },
    ]);
    c.deadlines.forEach((d, i) => {
      cases!.row(
        [
          i === 0 ? `${c.title}\n${c.kind.replace(/_/g, ' ')}, ${c.state}, aware ${timeText(c.aware_at, tz)}\n${c.id}` : '',
          d.obligation.replace('_', ' '),
          timeText(d.due_at, tz),
          d.status,
          deadlineRemaining(d),
        ],
        d.overdue ? { color: '#991b1b' } : {},
      );
    });
  }
  if (cases !== null) cases.end();
  else pdf.note('No open Article 14 case.');
}
