import { describe, expect, it } from 'vitest';
import { ARTIFACT_KINDS, COMPONENT_KINDS, MEMBER_KINDS, OS_BUNDLE_KIND, REFUSED_KINDS, isReleaseError, validateReleasePayload } from '../src/index.js';
import { loadVector } from './helpers/vectors.js';

const payloads = loadVector('release-payloads.json');

describe('component kinds (contracts §2)', () => {
  it('compose from one base list, each list with its own name', () => {
    expect(MEMBER_KINDS).toEqual(['container', 'model', 'config', 'service-binary']);
    expect(COMPONENT_KINDS).toEqual([...MEMBER_KINDS, OS_BUNDLE_KIND]);
    expect(ARTIFACT_KINDS).toEqual([...COMPONENT_KINDS, ...REFUSED_KINDS]);
    expect(new Set(ARTIFACT_KINDS).size).toBe(ARTIFACT_KINDS.length);
    for (const list of [MEMBER_KINDS, COMPONENT_KINDS, REFUSED_KINDS, ARTIFACT_KINDS]) expect(Object.isFrozen(list)).toBe(true);
  });

  it('a release component may have exactly the COMPONENT_KINDS', () => {
    const single = payloads.good.single;
    // the issue at components[0].kind, if any (other fields may object to a kind change too)
    const kindIssue = (kind: string) => {
      try {
        validateReleasePayload({ ...single, components: [{ ...single.components[0], kind }] });
        return undefined;
      } catch (e) {
        if (!isReleaseError(e)) throw e;
        return e.issues.find((i) => i.path === 'components[0].kind')?.message;
      }
    };
    for (const k of MEMBER_KINDS) expect(kindIssue(k)).toBeUndefined();
    for (const k of REFUSED_KINDS) expect(kindIssue(k)).toBe(`refused member kind "${k}"`);
    expect(kindIssue('firmware')).toBe(`unknown kind "firmware" (expected one of ${COMPONENT_KINDS.join(', ')})`);
  });
});
