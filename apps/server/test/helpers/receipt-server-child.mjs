// A device-channel server process for the receipt suites: the BUILT device channel (dist/, as
// shipped) on the parent's PostgreSQL schema and data dir (same tenant CA, same server TLS
// material). Prints `LISTENING <port>`. With `cfg.parkAt` = n, the unit-of-work hook parks at
// the n-th `release-receipt.accept` audit row this process writes (after the rows of its batch
// are written, before COMMIT) and prints `AT <n>`: the parent SIGKILLs it there, mid-batch.
import { readFile } from 'node:fs/promises';
import { startDeviceChannelService } from '../../dist/device-channel/wiring.js';
import { SigningRepository } from '../../dist/signing-repo/index.js';
import { openStore } from '../../dist/store/open.js';

const cfg = JSON.parse(await readFile(process.argv[2], 'utf8'));
const store = await openStore(cfg.open);
let accepted = 0;
const park = async (entry) => {
  if (entry.action !== 'release-receipt.accept') return;
  accepted += 1;
  if (accepted !== cfg.parkAt) return;
  process.stdout.write(`AT ${accepted}\n`);
  await new Promise(() => setInterval(() => {}, 1000));
};
const repository = new SigningRepository({ db: store.db, dataDir: cfg.dataDir });
const { server } = await startDeviceChannelService({
  db: store.db,
  listen: store.listen,
  dataDir: cfg.dataDir,
  addr: '127.0.0.1:0',
  repository,
  keys: repository.wrappedKeys,
  log: { error: (obj, msg) => process.stderr.write(`${msg} ${obj?.err?.message ?? ''}\n`) },
  hooks: { unitOfWork: { afterAudit: park } },
});
process.stdout.write(`LISTENING ${server.port}\n`);
process.on('SIGTERM', () => {
  void server.close(100).then(() => store.close().then(() => process.exit(0)));
});
