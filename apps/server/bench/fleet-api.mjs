// REST calls the device-channel benches make against a server process they started: one
// request (the session cookie and the CSRF header a cookie-authenticated write needs), and a
// signed release rolled out to a set of devices.
import { generateKeyPair, signRelease } from '@svc/release-core';

/** One request to `s.http`'s API; throws on any status but 2xx. */
export async function api(s, method, path, body, cookie) {
  const res = await fetch(`${s.http}/api/v1${path}`, {
    method,
    headers: { ...(cookie ? { cookie, 'x-svc-csrf': '1' } : {}), ...(body && !(body instanceof FormData) ? { 'content-type': 'application/json' } : {}) },
    body: body instanceof FormData ? body : body ? JSON.stringify(body) : undefined,
  });
  if (!res.ok) throw new Error(`${method} ${path}: ${res.status} ${await res.text()}`);
  return { res, json: res.status === 204 ? null : await res.json() };
}

/**
 * A signed single-component release rolled out through the REST API: to a static group of
 * `names`, or with `o.filter` to a dynamic group of the devices that filter selects (frozen
 * into the rollout's snapshot at its start); in three waves (10 %, 50 %, 100 %) unless `o.waves`.
 */
export async function rollOut(s, cookie, names, tag, o = {}) {
  const tenant = (await api(s, 'GET', '/auth/me', undefined, cookie)).json.tenant_id;
  const form = new FormData();
  form.set('name', `bench-${tag}`);
  form.set('version', '1.0.0');
  form.set('kind', 'config');
  form.set('file', new Blob([`bench ${tag}\n`]), 'bench.conf');
  const art = (await api(s, 'POST', '/artifacts', form, cookie)).json;
  const group = (await api(s, 'POST', '/groups', o.filter ? { name: `bench-${tag}`, filter: o.filter } : { name: `bench-${tag}`, members: names }, cookie))
    .json;
  const key = generateKeyPair('ed25519');
  await api(s, 'POST', '/authorizer-keys', { name: `bench-${tag}`, public_key_pem: key.publicKey.pem }, cookie);
  const payload = {
    tenant,
    product: 'bench',
    release: { version: `1.0.${tag}` },
    components: [
      {
        name: 'conf',
        kind: 'config',
        artifact: { id: art.id, name: art.name, version: art.version },
        target: art.target,
        digest: art.digest,
        length: art.length,
        media_type: art.media_type,
        placement: { path: '/etc/bench.conf', mode: '0644' },
      },
    ],
    targets: { [art.target]: { length: art.length, hashes: { sha256: art.digest.slice(7) } } },
    compatibility: { profiles: ['linux-arm64'] },
    activation: { ordered_groups: [['conf']] },
    health: { probes: [{ name: 'up', type: 'command', command: ['/bin/true'], timeout_s: 5 }], timeout_s: 60 },
    rollout: {
      target_group: group.id,
      target_policy_digest: group.snapshot_digest,
      waves: o.waves ?? [
        { name: 'canary', percent: 10 },
        { name: 'half', percent: 50 },
        { name: 'all', percent: 100 },
      ],
    },
    approvals: [],
    recovery: { on_failure: 'rollback', rollback_boundary: 'release' },
    attestations: [],
    validity: { not_before: '2020-01-01T00:00:00Z', not_after: '2099-01-01T00:00:00Z', max_offline_age_s: 2592000 },
  };
  const rel = (await api(s, 'POST', '/releases', { envelope: signRelease(payload, key), expected_product: 'bench' }, cookie)).json;
  const started = (await api(s, 'POST', '/rollouts', { release_id: rel.id }, cookie)).json;
  return { tenant, rel, started, group, digest: art.digest };
}
