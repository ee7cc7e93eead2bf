import { useState } from 'react';
import { useCan } from '../../api/session';
import { Download, Field, PageTitle, Select } from '../../ui/kit';
import { SEVERITIES } from './common';

/** The vulnerability and readiness reports: branded PDF and its JSON twin, downloaded as the server makes them. */
export function ReportsPage() {
  const can = useCan('evidence.read');
  const [product, setProduct] = useState('');
  const [severity, setSeverity] = useState('');
  const qs = (extra: Record<string, string>) => {
    const p = new URLSearchParams(Object.entries({ product, ...extra }).filter(([, v]) => v !== ''));
    const s = p.toString();
    return s ? `?${s}` : '';
  };
  return (
    <>
      <PageTitle>Reports</PageTitle>
      {!can.ok && <p className="reason">{can.reason}</p>}
      <div className="filters">
        <Field label="Product (optional)" hint="a product id; empty: every product">
          {(id) => <input id={id} value={product} onChange={(e) => setProduct(e.target.value.trim())} />}
        </Field>
        <Select
          label="Vulnerability report: severity at or above"
          value={severity}
          options={[['', 'any'], ...SEVERITIES.map((s) => [s, s] as const)]}
          onChange={setSeverity}
        />
      </div>
      <section aria-labelledby="vuln-report-h">
        <h2 id="vuln-report-h">Vulnerability report</h2>
        <p className="muted">
          Findings by severity and VEX status, data freshness, known exploited vulnerabilities first, then per product its artifacts, findings and exposed
          devices.
        </p>
        <div className="row">
          <Download href={`/api/v1/reports/vulnerability.pdf${qs({ severity })}`}>Vulnerability report (PDF)</Download>
          <Download href={`/api/v1/reports/vulnerability.json${qs({ severity })}`}>Vulnerability report (JSON)</Download>
        </div>
      </section>
      <section aria-labelledby="readiness-h">
        <h2 id="readiness-h">Readiness report</h2>
        <p className="muted">
          Fleet by status, release adoption, device evidence (device-signed or device-reported only), SBOM coverage, open findings by severity and age, key
          hygiene, and Article 14 cases with their deadlines.
        </p>
        <div className="row">
          <Download href={`/api/v1/reports/readiness.pdf${qs({})}`}>Readiness report (PDF)</Download>
          <Download href={`/api/v1/reports/readiness.json${qs({})}`}>Readiness report (JSON)</Download>
        </div>
      </section>
    </>
  );
}
