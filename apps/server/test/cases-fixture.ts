/**
 * Set-up of the Article 14 case suites: a test app on a fresh store with a REAL signing
 * repository (its blob store holds PDFs and attachments, its key directory the evidence key)
 * in a temp SVC_DATA_DIR, an injected clock, and helpers that go through the API.
 */
import { mkdtemp, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import type { AppContext } from '../src/http/context.js';
import { upsertEnrolledDevice } from '../src/resources/devices/queries/identity.js';
import { SigningRepository } from '../src/signing-repo/index.js';
import type { Driver } from '../src/store/open.js';
import { createTestApp, jsonApi, testConfig, type ApiAnswer, type ApiCall, type TestApp } from './helpers/app.js';
import { createTestStore } from './helpers/store.js';
import { artifactMultipart } from './pipeline-fixture.js';

export type { ApiAnswer };

export interface CasesFixture {
  t: TestApp;
  repo: SigningRepository;
  dataDir: string;
  admin: Record<string, string>;
  api: ApiCall;
  /** Opens a case (201 expected) with awareness one hour before now unless given. */
  openCase(over?: Record<string, unknown>, headers?: Record<string, string>): Promise<any>;
  artifact(name: string, version: string, bytes?: string): Promise<any>;
  device(name: string, tenantId?: string): Promise<void>;
  dispose(): Promise<void>;
}

export async function createCasesFixture(driver: Driver, ctxOverrides: Partial<AppContext> = {}): Promise<CasesFixture> {
  const store = await createTestStore(driver);
  const dataDir = await mkdtemp(join(tmpdir(), 'svc-cases-'));
  let clockRef: () => Date = () => new Date();
  const repo = new SigningRepository({ db: store.store.db, dataDir, clock: () => clockRef() });
  const t = await createTestApp(driver, { shareWith: store, ctxOverrides: { signingRepo: repo, config: testConfig({ dataDir }), ...ctxOverrides } });
  clockRef = t.clock.now;
  // an API key, not a session: tests move the clock past a session's lifetime
  const admin = await t.apiKeyHeaders('admin');
  const api = jsonApi(t, admin);
  return {
    t,
    repo,
    dataDir,
    admin,
    api,
    openCase: async (over = {}, headers = admin) => {
      const res = await api(
        'POST',
        '/api/v1/cases',
        {
          kind: 'exploited_vulnerability',
          title: 'Heap overflow in the gateway firmware',
          owner: 'psirt@example.test',
          products: ['edge-gateway'],
          vulnerability_ids: ['CVE-2026-12345'],
          awareness: {
            aware_at: new Date(t.clock.now().getTime() - 3600_000).toISOString(),
            aware_by: 'alice@example.test',
            evidence: 'KEV catalog entry and vendor report',
          },
          ...over,
        },
        headers,
      );
      if (res.status !== 201) throw new Error(`open case: ${res.status} ${JSON.stringify(res.body)}`);
      return res.body;
    },
    artifact: async (name, version, bytes = `${name}-${version}-payload`) => {
      const { payload, contentType } = artifactMultipart({ name, version, kind: 'service-binary', bytes });
      const res = await t.app.inject({ method: 'POST', url: '/api/v1/artifacts', headers: { ...admin, 'content-type': contentType }, payload });
      if (res.statusCode !== 201) throw new Error(`artifact: ${res.statusCode} ${res.body}`);
      return JSON.parse(res.body);
    },
    device: async (name, tenantId = t.tenantId) => {
      await upsertEnrolledDevice(store.store.db, {
        tenantId,
        name,
        profile: 'linux-arm64',
        certFingerprint: `sha256:${name}`,
        certNotAfter: null,
        now: t.clock.now(),
      });
    },
    dispose: async () => {
      await t.dispose();
      await store.dispose();
      await rm(dataDir, { recursive: true, force: true });
    },
  };
}

/** Complete valid content per stage and kind (tests take fields away from it). */
export const VALID_CONTENT = {
  early_warning: {
    exploited_vulnerability: { member_states: ['DE', 'FR'], sensitivity: 'TLP:AMBER' },
    severe_incident: { suspected_malicious: true, member_states: ['NL'], sensitivity: 'TLP:RED' },
  },
  notification: {
    exploited_vulnerability: {
      product_information: 'Edge gateway firmware 2.x on ARM64 devices.',
      vulnerability_nature: 'Heap overflow in the update parser.',
      exploit_nature: 'Crafted update manifest sent by a network attacker.',
      corrective_measures_taken: 'Parser hardened; release 2.4.1 in preparation.',
      user_measures: 'Block inbound manifests from untrusted networks.',
      sensitivity: 'TLP:AMBER',
    },
    severe_incident: {
      product_information: 'Edge gateway fleet management service.',
      incident_nature: 'Unauthorized access to the build system.',
      initial_assessment: 'Signing keys were not reached.',
      corrective_measures_taken: 'Credentials rotated.',
      user_measures: 'None required.',
      sensitivity: 'TLP:GREEN',
    },
  },
  final_report: {
    exploited_vulnerability: {
      description: 'Heap overflow in the update manifest parser.',
      severity: 'high',
      impact: 'Remote code execution as the update agent.',
      malicious_actor: 'Unknown actor observed in the wild.',
      security_update: 'Release 2.4.1 fixes the parser.',
    },
    severe_incident: {
      description: 'Intrusion into the build system through a leaked token.',
      severity: 'medium',
      impact: 'Build pipeline paused for six hours.',
      root_cause: 'Token committed to a public repository.',
      mitigation_measures: 'Token revoked, secret scanning enforced.',
    },
  },
  advisory: {
    exploited_vulnerability: {
      title: 'Gateway firmware heap overflow',
      summary: 'A heap overflow in the update parser is actively exploited.',
      severity: 'high',
      user_measures: 'Install release 2.4.1 or block untrusted manifests.',
      publisher_namespace: 'https://psirt.example.test',
    },
    severe_incident: {
      title: 'Build system incident',
      summary: 'An intrusion into the build system was contained.',
      severity: 'medium',
      user_measures: 'No action needed.',
      publisher_namespace: 'https://psirt.example.test',
      information_url: 'https://psirt.example.test/incidents/build-system',
      sensitivity: 'TLP:CLEAR',
    },
  },
} as const;
