#!/usr/bin/env node
/**
 * The server process: settings from the environment (contracts §6), open the store,
 * migrate, open the key-encryption key and move plain key files of an older data directory
 * into wrapped keys (key-custody/), default tenant and first admin, build the app, listen,
 * start jobs, and close everything in order on SIGINT/SIGTERM. Bad settings, a KEK that does
 * not open, and a key the database expects that is missing or not the recorded one
 * (key-integrity/), fail with one line, exit status 2.
 *
 * Subcommands: `check` (the key check alone) and `rewrap-keys --new-kek-...` (every wrapped
 * key moved to a new KEK in one transaction; docs/server.md "Key encryption").
 */
import { join } from 'node:path';
import { setFlagsFromString } from 'node:v8';
import { builtConsoleDir } from './http/console.js';
import { ConfigError, parseConfig } from './config.js';
import { startOfflineDetector, type Job } from './jobs/offline-detector.js';
import { startDeviceBulkJobs } from './jobs/device-bulk.js';
import { startTufRefresh } from './jobs/tuf-refresh.js';
import { startVulnAnalysis } from './jobs/vuln-analysis.js';
import { autovacuumOff, startEmbeddedVacuum, vacuumDueTables } from './jobs/embedded-vacuum.js';
import { CHANNEL_DEFAULTS } from './device-channel/context.js';
import { migrateToLatest } from './store/migrate.js';
import { openStore } from './store/open.js';
import { bootstrapAdmin } from './resources/tenants/bootstrap.js';
import { ensureDefaultTenant } from './resources/tenants/queries.js';
import { DeviceCredentialCache } from './device-channel/credential-cache.js';
import { SigningRepository } from './signing-repo/repository.js';
import { startDeltaGc } from './jobs/delta-gc.js';
import { startDeltaBuilds } from './jobs/delta-builds.js';
import { keyCheckers } from './key-integrity/checkers.js';
import { failureLine, keyRecoveryFromEnv, reportLine, runKeyCheck } from './key-integrity/key-check.js';
import { evidenceOptionsFromEnv } from './resources/case-submissions/transport.js';
import { blobStoreKind, blobStoreWarning, openBlobStore } from './blobs/index.js';
import { startBlobGc } from './jobs/blob-gc.js';
import { KekError } from './key-custody/kek.js';
import { describeKekSource, kekSourceFromEnv, openKek } from './key-custody/kek-source.js';
import { importPlainKeyFiles } from './key-custody/import-plain-keys.js';
import { newKekSourceFromArgs } from './key-custody/rewrap-command.js';
import { rewrapAllKeys } from './key-custody/rewrap.js';
import { WrappedKeys } from './key-custody/wrapped-keys.js';
import { SERVER_TUNING } from './limits.js';

async function main(): Promise<void> {
  // `node dist/main.js check`: the start-up key check alone, exit 0 (every key in place) or 2
  const checkOnly = process.argv[2] === 'check';
  const rewrap = process.argv[2] === 'rewrap-keys';
  let config;
  let evidence;
  let keyRecovery;
  let kekSource;
  let newKekSource;
  try {
    config = parseConfig(process.env);
    evidence = evidenceOptionsFromEnv(process.env);
    keyRecovery = keyRecoveryFromEnv(process.env);
    kekSource = kekSourceFromEnv(process.env, { dataDir: config.dataDir, postgres: config.databaseUrl !== undefined });
    if (rewrap) newKekSource = newKekSourceFromArgs(process.argv.slice(3), config.dataDir);
  } catch (error) {
    if (error instanceof ConfigError) {
      process.stderr.write(`svc-server: ${error.message}\n`);
      process.exit(2);
    }
    throw error;
  }

  // The embedded database's WebAssembly is compiled by V8's baseline compiler alone: the
  // optimising tier's compiler memory stayed in the C heap after start (about 60 MiB at rest),
  // for queries that the embedded default's small fleets barely notice (docs/server.md, "Memory
  // of the embedded server"). Read when PGlite compiles its module, so set before the store opens.
  if (config.databaseUrl === undefined) setFlagsFromString('--liftoff-only');
  const store = await openStore({
    databaseUrl: config.databaseUrl,
    pgliteDir: join(config.dataDir, 'db'),
    schema: config.databaseSchema,
    ...(config.databasePoolSize !== undefined ? { poolSize: config.databasePoolSize } : {}),
  });
  const applied = await migrateToLatest(store);
  const tenantId = await ensureDefaultTenant(store.db);
  const now = () => new Date();
  const refuse = async (line: string, keys?: WrappedKeys): Promise<never> => {
    await keys?.close();
    await store.close();
    process.stderr.write(`svc-server: ${line}\n`);
    process.exit(2);
  };
  // Every private key is stored wrapped by the KEK (docs/server.md "Key encryption").
  let kek;
  try {
    kek = await openKek(kekSource, config.dataDir);
  } catch (e) {
    if (e instanceof KekError) return refuse(`KEY_UNAVAILABLE: key-encryption key (${describeKekSource(kekSource)}): ${e.message}`);
    throw e;
  }
  const wrappedKeys = new WrappedKeys(store.db, kek);
  const imported = await importPlainKeyFiles(wrappedKeys, config.dataDir);
  if (imported.conflicts.length > 0) return refuse(`plain key file not imported: ${imported.conflicts[0]!}`, wrappedKeys);
  for (const line of imported.imported) process.stderr.write(`svc-server: imported ${line}\n`);
  if (rewrap && newKekSource !== undefined) {
    let next;
    try {
      next = await openKek(newKekSource, config.dataDir);
      const r = await rewrapAllKeys(store.db, kek, next);
      process.stdout.write(
        `rewrap-keys: ${r.rewrapped} keys rewrapped from ${kek.id} to ${next.id}${r.already > 0 ? ` (${r.already} were already under it)` : ''}\n`,
      );
    } catch (e) {
      if (e instanceof KekError) return refuse(`rewrap-keys: ${e.message}; nothing changed`, wrappedKeys);
      throw e;
    } finally {
      await next?.close();
    }
    await wrappedKeys.close();
    await store.close();
    process.exit(0);
  }
  // blobs in the database on PostgreSQL, so every process serves them (docs/server.md "Blob store")
  const blobKind = blobStoreKind(config.blobStore, config.databaseUrl);
  const blobs = openBlobStore(blobKind, { db: store.db, dataDir: config.dataDir });
  const signingRepo = new SigningRepository({ db: store.db, dataDir: config.dataDir, clock: now, wrappedKeys, blobs });

  // Every key the database expects must be in place before anything signs with it (docs/server.md).
  const keyCheck = await runKeyCheck(keyCheckers({ db: store.db, signingRepo }), checkOnly ? new Set() : keyRecovery);
  if (checkOnly) for (const r of keyCheck.reports) process.stdout.write(`${reportLine(r)}\n`);
  if (keyCheck.failure !== undefined || checkOnly) {
    await wrappedKeys.close();
    await store.close();
    if (keyCheck.failure !== undefined) process.stderr.write(`svc-server: ${failureLine(keyCheck.failure)}\n`);
    process.exit(keyCheck.failure === undefined ? 0 : 2);
  }

  // The HTTP app (fastify, every route, the report renderers) and the gRPC channel are loaded
  // only now: a start the key check refuses, and `check`, never pay for importing them.
  const [{ buildApp }, { startDeviceChannelService }] = await Promise.all([import('./app.js'), import('./device-channel/wiring.js')]);
  const adminCreated = await bootstrapAdmin(store.db, tenantId, config.admin);
  // An agent enrolling before the first publish pins the tenant's TUF root right away: it must exist.
  await signingRepo.ensureTenantRepo(tenantId);
  // contracts §1: TUF metadata names keys by TUF key ids; older repositories move by a root rotation.
  const keyIds = await signingRepo.upgradeKeyIds();
  const consoleDir = builtConsoleDir();
  // the device channel's remembered authentications, also cleared by a decommission through this process's REST API
  const deviceCredentials = await DeviceCredentialCache.open(store.listen);
  const app = await buildApp({
    store,
    deviceCredentials: deviceCredentials.cache,
    config,
    now,
    signingRepo,
    evidence,
    logger: { level: process.env.SVC_LOG_LEVEL ?? 'info' },
    ...(consoleDir !== undefined ? { consoleDir } : {}),
  });
  if (consoleDir === undefined) app.log.warn('web console not built (apps/console/dist): only the API is served');
  app.log.info({ driver: store.driver, schema: store.schema, blob_store: blobKind, migrations: applied, tenant: tenantId, adminCreated }, 'store ready');
  app.log.info({ kek: kek.id, source: describeKekSource(kekSource), imported: imported.imported.length }, 'key-encryption key open');
  const blobWarning = blobStoreWarning(blobKind, config.databaseUrl);
  if (blobWarning !== undefined) app.log.warn({ blob_store: blobKind }, blobWarning);
  for (const line of keyCheck.recovered) app.log.warn({ recovery: [...keyRecovery] }, line);
  for (const r of keyIds.rotated) app.log.info({ tenant: r.tenantId, root_version: r.rootVersion }, 'TUF root rotated to TUF key ids');
  for (const p of keyIds.pending) app.log.warn({ tenant: p.tenantId, err: p.error }, 'TUF repository still names keys by sha256: ids');
  if (store.driver === 'pglite') {
    // PGlite keeps no table statistics across restarts and has no autovacuum: start clean.
    const t0 = performance.now();
    const tables = await vacuumDueTables(store.db, { all: true });
    app.log.info({ tables: tables.length, ms: Math.round(performance.now() - t0) }, 'embedded vacuum at start');
  } else if (await autovacuumOff(store.db)) {
    app.log.warn('autovacuum is off on this PostgreSQL: nothing keeps table statistics current, and plans degrade as the fleet grows (docs/server.md)');
  }
  const url = await app.listen({ host: config.httpAddr.host, port: config.httpAddr.port });

  // Device gRPC channel (SVC_DEVICE_ADDR): enrollment + mTLS device services (docs/device-channel.md).
  const { host: dHost, port: dPort } = config.deviceAddr;
  const channel = await startDeviceChannelService({
    db: store.db,
    listen: store.listen,
    credentials: deviceCredentials.cache,
    dataDir: config.dataDir,
    keys: wrappedKeys,
    addr: `${dHost.includes(':') ? `[${dHost}]` : dHost}:${dPort}`,
    ...(config.deviceBundleAddr !== undefined ? { bundleAddr: config.deviceBundleAddr } : {}),
    repository: signingRepo,
    log: app.log,
    now,
    ...(config.checkInIntervalS !== undefined ? { checkInIntervalS: config.checkInIntervalS } : {}),
    ...(config.receiptVerifyThreads !== undefined ? { verifyThreads: config.receiptVerifyThreads } : {}),
    ...(config.deviceMaxConnections !== undefined ? { maxConnections: config.deviceMaxConnections } : {}),
    ...(config.deviceRetryAfterS !== undefined ? { retryAfterMs: config.deviceRetryAfterS * 1000 } : {}),
  });
  app.log.info(
    {
      port: channel.server.port,
      bundle_port: channel.server.bundlePort ?? null,
      receipt_verify_threads: channel.ctx.receipts.verifyThreads,
      max_connections: channel.ctx.admission.max,
    },
    'device channel listening',
  );
  // A device is offline after missing more than two check-ins (spec §2: online/offline status).
  const checkInMs = (config.checkInIntervalS ?? CHANNEL_DEFAULTS.checkInIntervalS) * 1000;
  const jobs: Job[] = [
    startOfflineDetector(store.db, now, {
      staleAfterMs: Math.max(90_000, checkInMs * 2.5),
      intervalMs: Math.min(30_000, checkInMs),
      onError: (e) => app.log.error({ err: e }, 'offline detector failed'),
    }),
    startTufRefresh(signingRepo, now, { onError: (e) => app.log.error({ err: e }, 'TUF refresh failed') }),
    // re-matches stored inventories after a feed import (leased through the database)
    startVulnAnalysis(store.db, now, { onError: (e) => app.log.error({ err: e }, 'vulnerability analysis failed') }),
    // bulk actions over filtered devices (leased through the database)
    startDeviceBulkJobs(store.db, now, { onError: (e) => app.log.error({ err: e }, 'device bulk action failed') }),
    // deltas of file members that rollouts asked for (leased through the database; docs/delta-updates.md)
    startDeltaBuilds(
      store.db,
      { blobs, publish: async (tenant, entry) => void (await signingRepo.publishTargets(tenant, [entry], { immutable: true })) },
      now,
      { onError: (e) => app.log.error({ err: e }, 'delta build failed') },
    ),
    // deltas no running rollout uses, or whose members are gone: rows and TUF targets retired
    startDeltaGc(store.db, { blobs, retireTargets: (trx, tenant, paths) => signingRepo.retireTargets(trx, tenant, paths) }, now, {
      onError: (e) => app.log.error({ err: e }, 'delta garbage collection failed'),
      onRetired: (n) => app.log.info({ deltas: n }, 'deltas retired'),
    }),
  ];
  if (blobKind === 'postgres') {
    jobs.push(
      startBlobGc(store.db, {
        onError: (e) => app.log.error({ err: e }, 'blob garbage collection failed'),
        onCollected: (r) =>
          app.log.info(
            { blobs: r.deleted.length, bytes: r.deleted.reduce((n, b) => n + b.length, 0), abandoned_uploads: r.abandonedUploads },
            'blob garbage collected',
          ),
      }),
    );
  }
  // PGlite has no autovacuum (single-user mode): the server does its job (jobs/embedded-vacuum.ts).
  if (store.driver === 'pglite') {
    jobs.push(
      startEmbeddedVacuum(store.db, {
        onError: (e) => app.log.error({ err: e }, 'embedded vacuum failed'),
        onVacuumed: (tables, ms) => app.log.info({ tables, ms: Math.round(ms) }, 'embedded vacuum'),
      }),
    );
  }
  // Refresh once at start too: a server that was down past a timestamp's expiry serves fresh metadata at once.
  void signingRepo.refreshAllDue(now()).catch((e: unknown) => app.log.error({ err: e }, 'TUF refresh failed'));

  let closing = false;
  const close = async (signal: string) => {
    if (closing) return;
    closing = true;
    const { shutdownGraceMs: graceMs, shutdownCloseMs: closeMs } = SERVER_TUNING;
    const t0 = performance.now();
    let step = 'drain';
    app.log.info({ signal, grace_ms: graceMs }, 'shutting down');
    // the bound: whatever still waits past the grace and the close, the process exits
    setTimeout(() => {
      app.log.error({ step, ms: Math.round(performance.now() - t0) }, 'shutdown exceeded its bound; exiting');
      process.exit(1);
    }, graceMs + closeMs);
    const timed = async (name: string, work: Promise<unknown>) => {
      const t = performance.now();
      await work;
      app.log.info({ step: name, ms: Math.round(performance.now() - t) }, 'shutdown step done');
    };
    // Stop accepting on both ports at once and drain for the grace: the device channel lets
    // running calls finish, then cuts its sessions (channel-server.ts); the HTTP server closes its
    // idle connections and cuts the rest at the end of the grace; jobs finish their pass or are
    // left (each pass works in transactions, and an unfinished one is never committed).
    const httpCut = setTimeout(() => {
      app.log.warn('HTTP requests still running at the end of the shutdown grace: connections closed');
      app.server.closeAllConnections();
    }, graceMs);
    const jobsCut = new Promise<void>((resolve) => setTimeout(resolve, graceMs).unref());
    await Promise.all([
      timed('device channel', channel.server.close(graceMs)),
      timed('http', app.close()).finally(() => clearTimeout(httpCut)),
      timed('jobs', Promise.race([Promise.allSettled(jobs.map((j) => j.stop())), jobsCut])),
    ]);
    step = 'close';
    await timed('credentials', deviceCredentials.close());
    await timed('keys', wrappedKeys.close());
    await timed('database', store.close());
    app.log.info({ ms: Math.round(performance.now() - t0) }, 'shut down');
    process.exit(0);
  };
  process.on('SIGINT', () => void close('SIGINT'));
  process.on('SIGTERM', () => void close('SIGTERM'));
  // One plain line whatever the log level, printed once everything runs and signals are
  // handled: scripts, tests and benches wait for it (port 0 = any).
  process.stdout.write(`svc-server: http listening on ${url}\n`);
}

main().catch((error: unknown) => {
  process.stderr.write(`svc-server: failed to start: ${error instanceof Error ? error.message : String(error)}\n`);
  process.exit(1);
});
