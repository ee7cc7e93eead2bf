/** Everything the full view and the export show of one case, read in one place. */
import type { Db } from '../../store/tx.js';
import { caseDeadlines } from './deadlines.js';
import { deadlineFacts, listAwareness, listDecisions, listIntermediateRequests, listMeasures, type CaseRow } from './queries.js';
import type { CaseRecords } from './views.js';

export async function caseRecords(db: Db, tenantId: string, c: CaseRow, now: Date): Promise<CaseRecords> {
  const [awareness, decisions, measures, requests, facts] = await Promise.all([
    listAwareness(db, tenantId, c.id),
    listDecisions(db, tenantId, c.id),
    listMeasures(db, tenantId, c.id),
    listIntermediateRequests(db, tenantId, c.id),
    deadlineFacts(db, tenantId, c),
  ]);
  return { awareness, decisions, measures, requests, deadlines: caseDeadlines(facts, now) };
}
