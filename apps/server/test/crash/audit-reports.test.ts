import { auditCrashSuite } from '../helpers/audit-crash.js';

// A report changes nothing but the audit trail: its generation row (with the SHA-256 of the
// bytes) commits with the read or not at all, and nothing is served without it.
auditCrashSuite('reports', [
  {
    name: 'generate the readiness report (PDF)',
    action: 'report.generate',
    prepare: async (f) => {
      await f.device('crash-report-1');
      return { request: { method: 'GET', url: '/api/v1/reports/readiness.pdf' }, observe: { method: 'GET', url: '/api/v1/audit?action=report.generate' } };
    },
  },
  {
    name: 'generate the vulnerability report (JSON twin)',
    action: 'report.generate',
    prepare: async () => ({
      request: { method: 'GET', url: '/api/v1/reports/vulnerability.json' },
      observe: { method: 'GET', url: '/api/v1/audit?action=report.generate' },
    }),
  },
]);
