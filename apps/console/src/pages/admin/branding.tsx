import { useMutation, useQuery, useQueryClient } from '@tanstack/react-query';
import { useEffect, useState, type FormEvent } from 'react';
import { RETURN_REPRESENTATION, api, ok, type Schema } from '../../api/client';
import { brandingQueries } from '../../api/queries/branding';
import { ErrorNote, Field, Guard, Loading, PageTitle, When } from '../../ui/kit';

type Branding = Schema<'/api/v1/admin/branding', 'get'>;
const LOGO_MAX_BYTES = 256 * 1024;

/** Report branding with a live preview of a report header (colours applied through the CSSOM). */
export function BrandingPage() {
  const client = useQueryClient();
  const branding = useQuery(brandingQueries.current());
  const [draft, setDraft] = useState<Branding>();
  const [logoError, setLogoError] = useState<string>();
  useEffect(() => {
    if (branding.data && draft === undefined) setDraft(branding.data);
  }, [branding.data, draft]);
  const save = useMutation({
    mutationFn: (b: Branding) =>
      ok(
        api.PUT('/api/v1/admin/branding', {
          body: { company_name: b.company_name, primary_color: b.primary_color, accent_color: b.accent_color, logo_data_url: b.logo_data_url },
          headers: RETURN_REPRESENTATION,
        }),
      ),
    onSuccess: (updated) => {
      if (updated) client.setQueryData(brandingQueries.current().queryKey, updated);
      return client.invalidateQueries({ queryKey: brandingQueries.current().queryKey });
    },
  });
  const readLogo = (file: File) => {
    setLogoError(undefined);
    if (file.size > LOGO_MAX_BYTES) return setLogoError(`${file.name}: larger than 256 KiB`);
    const reader = new FileReader();
    reader.onload = () => setDraft((d) => d && { ...d, logo_data_url: String(reader.result) });
    reader.readAsDataURL(file);
  };
  const submit = (e: FormEvent) => {
    e.preventDefault();
    if (draft) save.mutate(draft);
  };
  const d = draft;
  return (
    <>
      <PageTitle>Report branding</PageTitle>
      <ErrorNote error={branding.error} />
      {branding.isPending || d === undefined ? (
        <Loading what="branding" />
      ) : (
        <div className="split">
          <Guard perm="admin.manage" legend="Branding of exported reports">
            <form onSubmit={submit}>
              <Field label="Company name">
                {(id) => <input id={id} value={d.company_name ?? ''} onChange={(e) => setDraft({ ...d, company_name: e.target.value })} />}
              </Field>
              <Field label="Primary colour">
                {(id) => (
                  <input id={id} type="color" value={d.primary_color ?? '#1f4e79'} onChange={(e) => setDraft({ ...d, primary_color: e.target.value })} />
                )}
              </Field>
              <Field label="Accent colour">
                {(id) => <input id={id} type="color" value={d.accent_color ?? '#e07b00'} onChange={(e) => setDraft({ ...d, accent_color: e.target.value })} />}
              </Field>
              <Field label="Logo (PNG or SVG, at most 256 KiB)">
                {(id) => (
                  <input id={id} type="file" accept="image/png,image/svg+xml,image/jpeg" onChange={(e) => e.target.files?.[0] && readLogo(e.target.files[0])} />
                )}
              </Field>
              {d.logo_data_url && (
                <button type="button" onClick={() => setDraft({ ...d, logo_data_url: null })}>
                  Remove logo
                </button>
              )}
              <ErrorNote error={logoError ?? save.error} />
              <button type="submit" className="primary" disabled={save.isPending}>
                Save branding
              </button>
              {save.isSuccess && <p role="status">Saved.</p>}
              <p className="muted">
                Last saved <When at={branding.data?.updated_at} />
              </p>
            </form>
          </Guard>
          <section aria-labelledby="preview-h" className="preview">
            <h2 id="preview-h">Preview</h2>
            <div className="report" style={{ borderTopColor: d.primary_color ?? undefined }}>
              <div className="report-head" style={{ background: d.primary_color ?? undefined }}>
                {d.logo_data_url ? <img src={d.logo_data_url} alt={`${d.company_name ?? ''} logo`} height={32} /> : null}
                <span>{d.company_name || 'Company name'}</span>
              </div>
              <p>
                <strong style={{ color: d.accent_color ?? undefined }}>Release evidence report</strong>
              </p>
              <p className="muted">Transaction results and device-signed receipts appear here.</p>
            </div>
          </section>
        </div>
      )}
    </>
  );
}
