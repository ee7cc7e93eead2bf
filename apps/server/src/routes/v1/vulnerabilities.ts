import { Type } from 'typebox';
import { principalOf } from '../../auth/principal.js';
import { notFound } from '../../errors/server-error.js';
import type { V1Routes } from '../../http/context.js';
import { page } from '../../http/pagination.js';
import { ErrorResponses, iso, PageQuery, Strict } from '../../http/schemas.js';
import { exposedArtifactView, vulnerabilityExposure } from '../../resources/vulnerabilities/exposure.js';
import { advisoriesOf, kevEntry, resolveVulnKey } from '../../resources/vulnerabilities/queries.js';
import { inSnapshot } from '../../store/tx.js';
import { Vulnerability, VulnerabilityExposure } from '../../resources/vulnerabilities/schemas.js';

const IdParams = Strict({ id: Type.String({ minLength: 1, maxLength: 128 }) });

/** A vulnerability (records merged by alias) and its exposure in the caller's fleet (evidence.read). */
export const vulnerabilitiesRoutes: V1Routes = async (app, { ctx }) => {
  const db = ctx.store.db;

  const resolve = async (id: string) => {
    const key = await resolveVulnKey(db, id);
    if (!key) throw notFound(`vulnerability ${id}`);
    return key;
  };

  app.get(
    '/vulnerabilities/:id',
    {
      config: { permission: 'evidence.read', summary: 'A vulnerability by any id or alias: its records, severity, KEV entry' },
      schema: {
        params: IdParams,
        response: {
          200: Vulnerability,
          ...ErrorResponses,
        },
      },
    },
    async (request) => {
      const key = await resolve(request.params.id);
      const advisories = await advisoriesOf(db, key);
      const aliases = [...new Set([key, ...advisories.flatMap((a) => [a.id, ...a.aliases])])].sort();
      const kev = await kevEntry(db, aliases);
      return {
        id: key,
        aliases,
        known_exploited: kev !== undefined,
        kev: kev
          ? {
              date_added: kev.date_added,
              due_date: kev.due_date,
              vendor_project: kev.vendor_project,
              product: kev.product,
              name: kev.vulnerability_name,
              known_ransomware: kev.known_ransomware,
            }
          : null,
        advisories: advisories.map((a) => ({
          id: a.id,
          summary: a.summary,
          severity: a.severity,
          severity_source: a.severity_source,
          cvss_score: a.cvss_score,
          cvss_vector: a.cvss_vector,
          modified: iso(a.modified),
          published: iso(a.published),
          withdrawn: iso(a.withdrawn),
          affected: a.affected,
        })),
      };
    },
  );

  app.get(
    '/vulnerabilities/:id/exposure',
    {
      config: {
        permission: 'evidence.read',
        summary:
          'Exposure in the fleet: affected artifacts, releases naming them, devices running them (paginated), groups, and the published releases that fix them',
      },
      schema: {
        params: IdParams,
        querystring: Strict({ ...PageQuery }),
        response: {
          200: VulnerabilityExposure,
          ...ErrorResponses,
        },
      },
    },
    async (request) => {
      const tenantId = principalOf(request).tenantId;
      const key = await resolve(request.params.id);
      const { limit, offset } = page(request.query);
      // the page, its total and its counts in one snapshot (store/tx.ts inSnapshot)
      return inSnapshot(db, async (snap) => {
        const e = await vulnerabilityExposure(snap, tenantId, key, { limit, offset });
        return {
          vulnerability: key,
          artifacts: e.artifacts.map(exposedArtifactView),
          releases: e.releases,
          fixed_by: e.fixed_by,
          groups: e.groups,
          devices: e.devices,
          total: e.devices_total,
          limit,
          offset,
          counts: {
            artifacts: e.artifacts.length,
            open_artifacts: e.artifacts.filter((a) => a.open_findings > 0).length,
            releases: e.releases.length,
            groups: e.groups.length,
            devices: e.devices_total,
          },
        };
      });
    },
  );
};
