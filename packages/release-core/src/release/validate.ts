import { digestFromHex } from '../digest.js';
import { ReleaseError } from '../errors.js';
import { IDENTIFIER_PATTERNS as P } from '../identifiers.js';
import { Checker, describe, join } from '../schema/checker.js';
import { LIMITS as L } from '../limits.js';
import { COMPONENT_KINDS, OS_BUNDLE_KIND, RAUC_MEDIA_TYPE, REFUSED_KINDS, type ReleasePayload } from './types.js';
import { checkApprovals, checkAttestations, checkHealth, checkRecovery, checkRollout, checkValidity } from './validate-policy.js';

const TOP_LEVEL = [
  'tenant',
  'product',
  'release',
  'components',
  'targets',
  'compatibility',
  'activation',
  'health',
  'rollout',
  'approvals',
  'recovery',
  'attestations',
  'validity',
] as const;
const MEDIA_TYPE = /^[a-z0-9][a-z0-9!#$&^_.+-]{0,126}\/[a-z0-9][a-z0-9!#$&^_.+-]{0,126}$/;
/** a relative TUF target path: `/`-separated segments, none empty, `.` or `..` */
const TARGET_PATH = /^(?!.*(?:^|\/)\.{1,2}(?:\/|$))[A-Za-z0-9._+=@-]+(?:\/[A-Za-z0-9._+=@-]+)*$/;
const ABS_PATH = /^(?!.*\/\/)(?!.*(?:^|\/)\.{1,2}(?:\/|$))\/[^\0]*[^/]$/;

interface ComponentFacts {
  name?: string;
  kind?: string;
  target?: string;
  digest?: string;
  length?: number;
}

/**
 * Validate an `svc.release.v1` payload: every bound item of spec §2.1 and contracts §2. All
 * problems are reported at once as ReleaseError PAYLOAD_INVALID with `issues`.
 */
export function validateReleasePayload(value: unknown): ReleasePayload {
  const c = new Checker();
  const p = c.object(value, '', TOP_LEVEL);
  if (p) {
    c.string(p.tenant, 'tenant', { pattern: P.uuid, what: 'tenant UUID (lowercase)' });
    c.string(p.product, 'product', { pattern: P.product, what: 'product id' });
    const rel = c.object(p.release, 'release', ['version'], ['name']);
    if (rel) {
      c.string(rel.version, 'release.version', { pattern: P.version, what: 'version' });
      if (rel.name !== undefined) c.string(rel.name, 'release.name', { max: 128 });
    }
    const comps = checkComponents(c, p.components);
    checkTargets(c, p.targets, comps);
    const profiles = checkProfiles(c, p.compatibility);
    const groups = checkActivation(c, p.activation, comps);
    checkHealth(c, p.health, 'health', groups);
    checkRollout(c, p.rollout, 'rollout');
    checkApprovals(c, p.approvals, 'approvals');
    const recovery = checkRecovery(c, p.recovery, 'recovery');
    checkAttestations(c, p.attestations, 'attestations');
    checkValidity(c, p.validity, 'validity');
    // spec §2.1 / contracts §2: a multi-component Linux release rolls back as one release
    if (comps.length > 1 && profiles.some((x) => x.startsWith('linux-'))) {
      if (recovery.on_failure !== undefined && recovery.on_failure !== 'rollback')
        c.add('recovery.on_failure', `must be "rollback" for a multi-component release on a linux-* profile`);
      if (recovery.rollback_boundary !== undefined && recovery.rollback_boundary !== 'release')
        c.add('recovery.rollback_boundary', `must be "release" for a multi-component release on a linux-* profile`);
    }
  }
  if (c.issues.length > 0) {
    const first = c.issues[0]!;
    const more = c.issues.length > 1 ? ` (and ${c.issues.length - 1} more)` : '';
    throw new ReleaseError('PAYLOAD_INVALID', `invalid release payload: ${first.path}: ${first.message}${more}`, { issues: c.issues });
  }
  return value as ReleasePayload;
}

function checkComponents(c: Checker, value: unknown): ComponentFacts[] {
  const list = c.array(value, 'components', 1, L.components);
  if (!list) return [];
  const names = new Map<string, number>();
  const facts = list.map((item, i): ComponentFacts => {
    const at = `components[${i}]`;
    const o = c.object(item, at, ['name', 'kind', 'artifact', 'target', 'digest', 'length', 'media_type'], ['placement']);
    if (!o) return {};
    const name = c.string(o.name, join(at, 'name'), { pattern: P.componentName, what: 'component name' });
    if (name !== undefined) {
      const prev = names.get(name);
      if (prev !== undefined) c.add(join(at, 'name'), `duplicate component name ${JSON.stringify(name)} (also components[${prev}])`);
      else names.set(name, i);
    }
    const kind = checkKind(c, o.kind, join(at, 'kind'));
    const art = c.object(o.artifact, join(at, 'artifact'), ['id', 'name', 'version']);
    if (art) {
      c.string(art.id, join(at, 'artifact.id'), { pattern: P.id, max: 128, what: 'artifact id' });
      c.string(art.name, join(at, 'artifact.name'), { pattern: P.artifactName, what: 'artifact name' });
      c.string(art.version, join(at, 'artifact.version'), { pattern: P.version, what: 'artifact version' });
    }
    const target = c.string(o.target, join(at, 'target'), { pattern: TARGET_PATH, max: 255, what: 'TUF target path' });
    const digest = c.digest(o.digest, join(at, 'digest'));
    const length = c.integer(o.length, join(at, 'length'), 0);
    const mediaType = c.string(o.media_type, join(at, 'media_type'), { pattern: MEDIA_TYPE, what: 'media type' });
    if (o.placement !== undefined) checkPlacement(c, o.placement, join(at, 'placement'));
    if (kind === OS_BUNDLE_KIND) {
      // spec §2.1 rule 3: the artifact has the .raucb extension and the RAUC media type
      if (target !== undefined && !target.endsWith('.raucb')) c.add(join(at, 'target'), 'an os-bundle target must end in ".raucb"');
      if (mediaType !== undefined && mediaType !== RAUC_MEDIA_TYPE) c.add(join(at, 'media_type'), `an os-bundle must have media type "${RAUC_MEDIA_TYPE}"`);
    }
    return { name, kind, target, digest, length };
  });
  // spec §2.1 rule 3: an os-bundle is a standalone release boundary, the only component
  if (facts.length > 1)
    facts.forEach((f, i) => {
      if (f.kind === OS_BUNDLE_KIND) c.add(`components[${i}].kind`, 'an os-bundle must be the only component of a release');
    });
  return facts;
}

function checkKind(c: Checker, value: unknown, path: string): string | undefined {
  if (typeof value !== 'string') {
    c.add(path, `expected a string, got ${describe(value)}`);
    return undefined;
  }
  // spec §2.1 rule 2: refused member kinds, named as such so the operator knows it is deliberate
  if ((REFUSED_KINDS as readonly string[]).includes(value)) {
    c.add(path, `refused member kind ${JSON.stringify(value)}`);
    return undefined;
  }
  // spec §2.1 rule 1: supported members (and the standalone os-bundle)
  if (!(COMPONENT_KINDS as readonly string[]).includes(value)) {
    c.add(path, `unknown kind ${describe(value)} (expected one of ${COMPONENT_KINDS.join(', ')})`);
    return undefined;
  }
  return value;
}

function checkPlacement(c: Checker, value: unknown, path: string): void {
  const o = c.object(value, path, ['path'], ['mode', 'owner', 'group']);
  if (!o) return;
  c.string(o.path, join(path, 'path'), { pattern: ABS_PATH, max: 4096, what: 'absolute normalized path' });
  if (o.mode !== undefined) c.string(o.mode, join(path, 'mode'), { pattern: /^0?[0-7]{3}$/, what: 'octal mode' });
  if (o.owner !== undefined) c.string(o.owner, join(path, 'owner'), { pattern: /^[a-z_][a-z0-9_-]{0,31}$/, what: 'user name' });
  if (o.group !== undefined) c.string(o.group, join(path, 'group'), { pattern: /^[a-z_][a-z0-9_-]{0,31}$/, what: 'group name' });
}

/** contracts §2: `targets` holds exactly the component targets, agreeing on length and sha256. */
function checkTargets(c: Checker, value: unknown, comps: ComponentFacts[]): void {
  const t = c.record(value, 'targets', L.components);
  if (!t) return;
  const byTarget = new Map<string, ComponentFacts>();
  for (const f of comps) if (f.target !== undefined) byTarget.set(f.target, f);
  for (const [path, desc] of Object.entries(t)) {
    const at = `targets[${JSON.stringify(path)}]`;
    const comp = byTarget.get(path);
    if (!comp) c.add(at, 'is not the target of any component');
    const d = c.object(desc, at, ['length', 'hashes']);
    if (!d) continue;
    const length = c.integer(d.length, join(at, 'length'), 0);
    const hashes = c.object(d.hashes, join(at, 'hashes'), ['sha256']);
    const hex = hashes ? c.string(hashes.sha256, join(at, 'hashes.sha256'), { pattern: /^[0-9a-f]{64}$/, max: 64, what: 'sha256 hex' }) : undefined;
    if (comp && length !== undefined && comp.length !== undefined && length !== comp.length)
      c.add(join(at, 'length'), `${length} differs from the component length ${comp.length}`);
    if (comp && hex !== undefined && comp.digest !== undefined && digestFromHex(hex) !== comp.digest)
      c.add(join(at, 'hashes.sha256'), `differs from the component digest ${comp.digest}`);
  }
  comps.forEach((f, i) => {
    if (f.target !== undefined && !Object.hasOwn(t, f.target)) c.add('targets', `missing the target ${JSON.stringify(f.target)} of components[${i}]`);
  });
}

function checkProfiles(c: Checker, value: unknown): string[] {
  const o = c.object(value, 'compatibility', ['profiles']);
  const list = o ? c.array(o.profiles, 'compatibility.profiles', 1, L.profiles) : undefined;
  const out: string[] = [];
  list?.forEach((p, i) => {
    const s = c.string(p, `compatibility.profiles[${i}]`, { pattern: P.profile, what: 'profile' });
    if (s === undefined) return;
    if (out.includes(s)) c.add(`compatibility.profiles[${i}]`, `duplicate profile ${JSON.stringify(s)}`);
    else out.push(s);
  });
  return out;
}

/** spec §2.1 / contracts §2: ordered_groups names every component exactly once, no empty group. */
/** Returns the number of activation groups (0 when they cannot be read). */
function checkActivation(c: Checker, value: unknown, comps: ComponentFacts[]): number {
  const o = c.object(value, 'activation', ['ordered_groups']);
  const groups = o ? c.array(o.ordered_groups, 'activation.ordered_groups', 1, L.components) : undefined;
  if (!groups) return 0;
  const known = new Set(comps.map((f) => f.name).filter((n): n is string => n !== undefined));
  const placed = new Map<string, string>();
  groups.forEach((g, gi) => {
    const at = `activation.ordered_groups[${gi}]`;
    const names = c.array(g, at, 1, L.components);
    names?.forEach((n, ni) => {
      const p = `${at}[${ni}]`;
      const name = c.string(n, p, { pattern: P.componentName, what: 'component name' });
      if (name === undefined) return;
      if (!known.has(name)) c.add(p, `names no component (${JSON.stringify(name)})`);
      else if (placed.has(name)) c.add(p, `component ${JSON.stringify(name)} appears twice (also ${placed.get(name)})`);
      else placed.set(name, p);
    });
  });
  comps.forEach((f, i) => {
    if (f.name !== undefined && !placed.has(f.name))
      c.add('activation.ordered_groups', `component ${JSON.stringify(f.name)} (components[${i}]) is in no group`);
  });
  return groups.length;
}
