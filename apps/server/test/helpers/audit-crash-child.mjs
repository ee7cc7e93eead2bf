// A server process for the audit-atomicity crash suites: the BUILT app (dist/, as shipped)
// on the parent's database, with one unit-of-work hook that parks after the audit row of
// `cfg.action` is written and before COMMIT, and says so; the parent SIGKILLs it there.
// `cfg.job` names a background job run once instead of `cfg.request`.
import { readFile } from 'node:fs/promises';
import { buildApp } from '../../dist/app.js';
import { runVulnAnalysis } from '../../dist/jobs/vuln-analysis.js';
import { SigningRepository } from '../../dist/signing-repo/index.js';
import { openStore } from '../../dist/store/open.js';

const cfg = JSON.parse(await readFile(process.argv[2], 'utf8'));
const store = await openStore(cfg.open);
const park = async (entry) => {
  if (entry.action !== cfg.action) return;
  process.stdout.write(`AT ${entry.action}\n`);
  await new Promise(() => setInterval(() => {}, 1000));
};
const app = await buildApp({
  store,
  config: {
    dataDir: cfg.dataDir,
    databaseUrl: cfg.open.databaseUrl,
    databaseSchema: cfg.open.schema,
    httpAddr: { host: '127.0.0.1', port: 0 },
    deviceAddr: { host: '127.0.0.1', port: 0 },
    admin: undefined,
  },
  now: () => new Date(),
  logger: false,
  signingRepo: new SigningRepository({ db: store.db, dataDir: cfg.dataDir }),
  hooks: { unitOfWork: { afterAudit: park } },
});
if (cfg.job === 'vuln-analysis') {
  const batches = await runVulnAnalysis(store.db, () => new Date(), { owner: 'audit-crash-child', hooks: { afterAudit: park } });
  process.stdout.write(`DONE ${batches} batches\n`);
  process.exit(0);
}
const { payloadBase64, ...request } = cfg.request;
if (payloadBase64 !== undefined) request.payload = Buffer.from(payloadBase64, 'base64');
const res = await app.inject(request);
process.stdout.write(`DONE ${res.statusCode} ${res.body}\n`);
process.exit(0);
