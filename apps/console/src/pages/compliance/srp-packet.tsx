import { useMutation, useQuery, useQueryClient } from '@tanstack/react-query';
import { useState, type FormEvent } from 'react';
import { api, ok, type Schema, type paths } from '../../api/client';
import { caseQueries } from '../../api/queries/cases';
import { Badge, copyText, ErrorNote, Field, Guard, Mono, When } from '../../ui/kit';

type Packet = Schema<'/api/v1/cases/{id}/srp-packets/{pid}', 'get'>;
type PacketBody = paths['/api/v1/cases/{id}/srp-packets']['post']['requestBody']['content']['application/json'];
type Stage = PacketBody['stage'];
type Category = NonNullable<PacketBody['product_category']>;

const STAGES: [Stage, string][] = [
  ['early_warning', 'Early warning'],
  ['notification', 'Notification'],
  ['final_report', 'Final report'],
];
const stageWords = (s: string) => STAGES.find(([v]) => v === s)?.[1] ?? s;
const CATEGORIES: [Category, string][] = [
  ['default', 'Default (not in Annex III or IV)'],
  ['important_class_i', 'Important, class I'],
  ['important_class_ii', 'Important, class II'],
  ['critical', 'Critical (Annex IV)'],
];

/**
 * The case's packets for ENISA's single reporting platform: prepare one for a stage (the
 * server fills the form's fields from the case and the fleet and records it), then copy it into
 * the platform's web form field by field or as a whole, with the missing required values first.
 */
export function ReportingPlatformPacket({ caseId, editable }: { caseId: string; editable: boolean }) {
  const client = useQueryClient();
  const [shown, setShown] = useState<string | undefined>(undefined);
  const packets = useQuery(caseQueries.srpPackets(caseId));
  const latest = packets.data?.packets.at(-1)?.id;
  const pid = shown ?? latest;
  const packet = useQuery(caseQueries.srpPacket(caseId, pid));
  const prepare = useMutation({
    mutationFn: (body: PacketBody) => ok(api.POST('/api/v1/cases/{id}/srp-packets', { params: { path: { id: caseId } }, body })),
    onSuccess: (p) => {
      client.setQueryData(caseQueries.srpPacket(caseId, p.id).queryKey, p);
      setShown(p.id);
      return Promise.all([
        client.invalidateQueries({ queryKey: caseQueries.keys.srpPackets(caseId) }),
        client.invalidateQueries({ queryKey: caseQueries.keys.audit(caseId) }),
      ]);
    },
  });
  const submit = (e: FormEvent<HTMLFormElement>) => {
    e.preventDefault();
    const d = new FormData(e.currentTarget);
    const category = String(d.get('product_category') ?? '');
    prepare.mutate({ stage: String(d.get('stage')) as Stage, ...(category ? { product_category: category as Category } : {}) });
  };
  const list = packets.data?.packets ?? [];
  return (
    <section aria-labelledby="packet-h">
      <h2 id="packet-h">Reporting-platform packet (ENISA)</h2>
      <p className="muted">
        ENISA&apos;s single reporting platform takes the notification through its web form. Prepare the packet of a stage, copy each field into the form, then
        record the filing to ENISA on the stage&apos;s submission with the reference the platform returned.
      </p>
      <Guard perm="evidence.write" legend="Prepare a packet">
        <form className="filters" onSubmit={submit}>
          <Field label="Packet stage">
            {(fid) => (
              <select id={fid} name="stage" defaultValue="early_warning" disabled={!editable}>
                {STAGES.map(([v, w]) => (
                  <option key={v} value={v}>
                    {w}
                  </option>
                ))}
              </select>
            )}
          </Field>
          <Field label="Product category" hint="the CRA category; the case does not record it">
            {(fid) => (
              <select id={fid} name="product_category" defaultValue="" disabled={!editable}>
                <option value="">not given</option>
                {CATEGORIES.map(([v, w]) => (
                  <option key={v} value={v}>
                    {w}
                  </option>
                ))}
              </select>
            )}
          </Field>
          <button type="submit" className="primary" disabled={!editable || prepare.isPending}>
            Prepare packet
          </button>
        </form>
        {!editable && <p className="muted">A closed case prepares no packet; reopen it first.</p>}
        <ErrorNote error={prepare.error} />
      </Guard>
      <ErrorNote error={packets.error ?? packet.error} />
      {list.length > 1 && (
        <Field label="Packet shown">
          {(fid) => (
            <select id={fid} value={pid} onChange={(e) => setShown(e.target.value)}>
              {list.map((p) => (
                <option key={p.id} value={p.id}>
                  {stageWords(p.stage)}, {new Date(p.created_at).toLocaleString()} ({p.missing === 0 ? 'complete' : `${p.missing} missing`})
                </option>
              ))}
            </select>
          )}
        </Field>
      )}
      {list.length === 0 && !packets.isPending && <p className="muted">No packet prepared yet.</p>}
      {packet.data && <PacketView packet={packet.data} />}
    </section>
  );
}

function PacketView({ packet }: { packet: Packet }) {
  const [copied, setCopied] = useState('');
  const copy = (what: string, text: string) =>
    void copyText(text).then(
      () => setCopied(`Copied ${what}.`),
      (e: unknown) => setCopied(`Could not copy ${what}: ${e instanceof Error ? e.message : String(e)}`),
    );
  return (
    <article aria-labelledby="packet-view-h" className="packet">
      <h3 id="packet-view-h">
        {stageWords(packet.stage)} packet, prepared by {packet.created_by} <When at={packet.created_at} />
      </h3>
      <p className="muted">
        Form fields version {packet.form.version} ({packet.form.source}). Packet digest <Mono>{packet.digest}</Mono>
      </p>
      {packet.missing.length === 0 ? (
        <p>Every required field has a value.</p>
      ) : (
        <div className="secret" role="region" aria-labelledby="packet-missing-h">
          <h4 id="packet-missing-h">Missing required values ({packet.missing.length})</h4>
          <ul>
            {packet.missing.map((m) => (
              <li key={m.id}>{m.label}</li>
            ))}
          </ul>
        </div>
      )}
      <p className="row">
        <button type="button" onClick={() => copy('the whole packet', packet.text)}>
          Copy the whole packet
        </button>
        <span role="status">{copied}</span>
      </p>
      <ol className="packet-fields">
        {packet.fields.map((f) => (
          <li key={f.id} data-field={f.id}>
            <div className="row">
              <strong>{f.label}</strong> <Badge value={f.required ? 'required' : 'optional'} />
              {f.missing && <Badge value="missing" />}
              {f.value !== null && (
                <button type="button" onClick={() => copy(f.label, f.value!)}>
                  Copy<span className="sr-only"> {f.label}</span>
                </button>
              )}
            </div>
            {f.value === null ? <p className="muted">(no value)</p> : <p className="packet-value">{f.value}</p>}
          </li>
        ))}
      </ol>
    </article>
  );
}
