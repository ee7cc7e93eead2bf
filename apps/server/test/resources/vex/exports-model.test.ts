/**
 * The VEX export's model (resources/vex/exports.ts), pure: which statement is in effect when a
 * statement on the whole artifact and one on a component of it meet, and which release a fixed
 * status and an update name when several releases ship the fixed artifacts. Each model is
 * also written as CSAF and run through every mandatory test of the BSI validator.
 */
import validate, { type DocumentTest } from '@secvisogram/csaf-validator-lib/validate.js';
import * as mandatory from '@secvisogram/csaf-validator-lib/mandatoryTests.js';
import { csaf_2_0_strict } from '@secvisogram/csaf-validator-lib/schemaTests.js';
import { describe, expect, it } from 'vitest';
import { buildCsafVex, vexModel, type VexExportFacts } from '../../../src/resources/vex/exports.js';
import type { StatementRow } from '../../../src/resources/vex/queries.js';

const A1 = {
  id: '00000000-0000-4000-8000-000000000001',
  name: 'fw',
  version: '1.0.0',
  kind: 'config',
  digest: `sha256:${'1'.repeat(64)}` as const,
  filename: 'fw-1',
};
const A2 = { ...A1, id: '00000000-0000-4000-8000-000000000002', version: '2.0.0', digest: `sha256:${'2'.repeat(64)}` as const, filename: 'fw-2' };
const A3 = { ...A1, id: '00000000-0000-4000-8000-000000000003', version: '3.0.0', digest: `sha256:${'3'.repeat(64)}` as const, filename: 'fw-3' };
const ZLIB = 'pkg:generic/zlib@1.2.11';
const at = (day: number) => new Date(Date.UTC(2026, 0, day));
let n = 0;
const statement = (artifact: { id: string }, vuln: string, status: StatementRow['status'], day: number, component: string | null = null): StatementRow => ({
  id: `s${++n}`,
  tenant_id: 't',
  artifact_id: artifact.id,
  format: 'openvex',
  document_digest: `sha256:${String(n).padStart(64, '0')}`,
  vuln_id: vuln,
  component_purl: component,
  status,
  justification: status === 'not_affected' ? 'component_not_present' : null,
  impact_statement: null,
  action_statement: null,
  statement_at: at(day),
  recorded_at: at(day),
  actor: 'user:a',
});
const facts = (statements: StatementRow[], releases: VexExportFacts['releases'] = []): VexExportFacts => ({
  product: 'edge',
  publisherName: 'ACME',
  namespace: 'https://acme.example',
  csafBaseUrl: undefined,
  artifacts: [A1, A2, A3],
  releases,
  statements,
  findings: [],
  now: at(100),
});
const rows = (f: VexExportFacts) =>
  vexModel(f).vulnerabilities.flatMap((v) => v.statements.map((s) => [v.key, s.artifact.version, s.component?.purl ?? null, s.status]));

async function mandatoryErrors(doc: unknown): Promise<string[]> {
  const result = await validate([csaf_2_0_strict, ...Object.values<DocumentTest>(mandatory)], doc);
  return result.tests.flatMap((t) => t.errors.map((e) => `${t.name} ${e.instancePath}: ${e.message}`));
}

describe('the statement in effect', () => {
  it('a later statement on the whole artifact decides its components too; an older one leaves a later component statement standing', async () => {
    const f = facts([
      statement(A1, 'CVE-2026-1', 'affected', 1, ZLIB),
      statement(A1, 'CVE-2026-1', 'not_affected', 2),
      statement(A1, 'CVE-2026-2', 'under_investigation', 1),
      statement(A1, 'CVE-2026-2', 'not_affected', 2, ZLIB),
    ]);
    expect(rows(f)).toEqual([
      ['CVE-2026-1', '1.0.0', null, 'not_affected'],
      ['CVE-2026-2', '1.0.0', null, 'under_investigation'],
      ['CVE-2026-2', '1.0.0', ZLIB, 'not_affected'],
    ]);
    const doc = buildCsafVex(vexModel(f)) as any;
    expect(await mandatoryErrors(doc)).toEqual([]);
    // the component is a product of its own, its status on the relationship's product
    expect(doc.product_tree.relationships).toEqual([
      {
        category: 'default_component_of',
        product_reference: 'CSAFPID-C-1',
        relates_to_product_reference: `CSAFPID-A-${A1.id}`,
        full_product_name: { name: `zlib 1.2.11 in fw 1.0.0`, product_id: `CSAFPID-A-${A1.id}-C-1` },
      },
    ]);
    expect(doc.vulnerabilities[1].product_status).toEqual({ known_not_affected: [`CSAFPID-A-${A1.id}-C-1`], under_investigation: [`CSAFPID-A-${A1.id}`] });
  });

  it('the same statement time: the later recorded wins', () => {
    const first = statement(A1, 'CVE-2026-3', 'affected', 5);
    const second = { ...statement(A1, 'CVE-2026-3', 'fixed', 5), recorded_at: at(6) };
    expect(rows(facts([second, first]))).toEqual([['CVE-2026-3', '1.0.0', null, 'fixed']]);
    expect(rows(facts([first, { ...second, recorded_at: at(4) }]))).toEqual([['CVE-2026-3', '1.0.0', null, 'affected']]);
  });
});

describe('the release that fixes it', () => {
  it('fixed names the first release that ships the artifact; affected updates to the newest release with a fix', async () => {
    const releases = [
      { id: 'r1', version: '1.0.0', created_at: at(1), artifact_ids: [A1.id] },
      { id: 'r2', version: '2.0.0', created_at: at(2), artifact_ids: [A2.id] },
      { id: 'r2b', version: '2.0.1', created_at: at(3), artifact_ids: [A2.id] },
      { id: 'r3', version: '3.0.0', created_at: at(4), artifact_ids: [A3.id] },
    ];
    const m = vexModel(
      facts([statement(A1, 'CVE-2026-4', 'affected', 1), statement(A2, 'CVE-2026-4', 'fixed', 2), statement(A3, 'CVE-2026-4', 'fixed', 3)], releases),
    );
    const v = m.vulnerabilities[0]!;
    expect(Object.fromEntries([...v.fixedIn].map(([a, r]) => [a, r.id]))).toEqual({ [A2.id]: 'r2', [A3.id]: 'r3' });
    expect(v.update?.id).toBe('r3');
    const doc = buildCsafVex(m) as any;
    expect(await mandatoryErrors(doc)).toEqual([]);
    expect(doc.vulnerabilities[0].remediations.map((r: any) => [r.category, r.details, r.product_ids])).toEqual([
      ['vendor_fix', 'Fixed in edge 2.0.0 (release r2).', [`CSAFPID-A-${A2.id}`]],
      ['vendor_fix', 'Fixed in edge 3.0.0 (release r3).', [`CSAFPID-A-${A3.id}`]],
      ['vendor_fix', 'Update to edge 3.0.0 (release r3), which contains the fix.', [`CSAFPID-A-${A1.id}`]],
    ]);
  });
});
