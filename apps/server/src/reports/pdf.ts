/**
 * The one branded-document module of the server: every PDF it produces (Article 14 submissions
 * now; the vulnerability and readiness reports later) is drawn through `BrandedPdf`, so the
 * tenant's report branding (company name, logo, accent colour, footer) looks the same on all
 * of them.
 *
 *   const pdf = new BrandedPdf({ title: 'Early warning', branding, generatedAt: now, documentId: digest });
 *   pdf.heading('Case');
 *   pdf.fields([['Kind', 'actively exploited vulnerability'], ['Aware at', '2026-10-01T10:00:00Z']]);
 *   pdf.paragraph('...');
 *   const bytes = await pdf.bytes();   // or pdf.stream() for large reports
 *
 * pdfkit (maintained, pure JavaScript, no headless browser to install or sandbox) writes the
 * PDF as a stream; pages are not buffered, so a long report stays small in memory. Text uses
 * the PDF standard fonts (Helvetica), whose encoding is Windows-1252: characters outside it are
 * printed as `?` rather than as a wrong glyph. The machine-readable twin of every document (its
 * JSON) carries the exact text.
 */
import type { Readable } from 'node:stream';
import PDFDocument from 'pdfkit';

/** The report branding of a tenant, as the PDF uses it. */
export interface ReportBranding {
  /** Company name printed in the header (the tenant name when branding has none). */
  name: string;
  /** `#rrggbb`: headings and the header rule. */
  accentColor: string;
  /** `#rrggbb`: body text. */
  primaryColor: string;
  /** PNG or JPEG bytes; other logo formats are not drawn (pdfkit embeds only these two). */
  logo: { bytes: Buffer; format: 'png' | 'jpeg' } | null;
  /** The line printed at the bottom of every page, before the page number. */
  footer: string;
}

/** The stored branding settings (admin branding: `company_name`, colours, `logo_data_url`). */
export interface BrandingSettings {
  company_name: string;
  primary_color: string;
  accent_color: string;
  logo_data_url: string | null;
}

const DEFAULT_SETTINGS: BrandingSettings = { company_name: '', primary_color: '#1f2937', accent_color: '#2563eb', logo_data_url: null };
const LOGO = /^data:image\/(png|jpeg);base64,([A-Za-z0-9+/]+={0,2})$/;

/**
 * Branding for a document: the stored settings (defaults when the tenant set none), the tenant
 * name when no company name is set, and a footer naming the company and `footerNote`.
 */
export function reportBranding(settings: BrandingSettings | undefined, tenantName: string, footerNote = 'Confidential'): ReportBranding {
  const s = settings ?? DEFAULT_SETTINGS;
  const name = s.company_name.trim() !== '' ? s.company_name.trim() : tenantName;
  const m = s.logo_data_url === null ? null : LOGO.exec(s.logo_data_url);
  return {
    name,
    accentColor: s.accent_color,
    primaryColor: s.primary_color,
    logo: m === null ? null : { bytes: Buffer.from(m[2]!, 'base64'), format: m[1] as 'png' | 'jpeg' },
    footer: [name, footerNote].filter((x) => x !== '').join(' - '),
  };
}

// Windows-1252 beyond Latin-1: what the standard fonts can draw besides U+0020..U+00FF.
const CP1252_EXTRA = new Set('€‚ƒ„…†‡ˆ‰Š‹ŒŽ‘’“”•–—˜™š›œžŸ');

/** Text the standard fonts can draw: other characters become `?`, controls other than newline a space. */
export function pdfText(s: string): string {
  let out = '';
  for (const ch of s.normalize('NFC')) {
    const cp = ch.codePointAt(0)!;
    if (ch === '\n') out += ch;
    else if (cp < 0x20 || (cp >= 0x7f && cp < 0xa0)) out += ' ';
    else if (cp <= 0xff || CP1252_EXTRA.has(ch)) out += ch;
    else out += '?';
  }
  return out;
}

export interface BrandedPdfOptions {
  title: string;
  subtitle?: string;
  branding: ReportBranding;
  generatedAt: Date;
  /** Printed under the title, e.g. the document's digest. */
  documentId?: string;
}

const MARGIN = 50;

export class BrandedPdf {
  /** The underlying pdfkit document, for drawings this class does not offer (charts). */
  readonly doc: PDFKit.PDFDocument;
  readonly branding: ReportBranding;
  #page = 0;

  constructor(o: BrandedPdfOptions) {
    this.branding = o.branding;
    this.doc = new PDFDocument({
      size: 'A4',
      margins: { top: MARGIN + 40, bottom: MARGIN + 20, left: MARGIN, right: MARGIN },
      // fixed dates make the bytes a function of the content and the generation time
      info: { Title: pdfText(o.title), Author: pdfText(o.branding.name), Creator: 'svc', Producer: 'svc', CreationDate: o.generatedAt, ModDate: o.generatedAt },
      autoFirstPage: false,
    });
    this.doc.on('pageAdded', () => this.#decorate());
    this.doc.addPage();
    this.doc.fillColor(o.branding.accentColor).font('Helvetica-Bold').fontSize(18).text(pdfText(o.title));
    if (o.subtitle !== undefined) this.doc.fillColor(o.branding.primaryColor).font('Helvetica').fontSize(11).text(pdfText(o.subtitle));
    this.doc.fillColor('#6b7280').font('Helvetica').fontSize(8).text(pdfText(`Generated ${o.generatedAt.toISOString()}${o.documentId === undefined ? '' : `  |  ${o.documentId}`}`));
    this.doc.moveDown(1);
  }

  /** Header (logo, company name, accent rule) and footer (branding footer, page number) of each page. */
  #decorate(): void {
    const d = this.doc;
    this.#page += 1;
    const { x, y } = { x: d.x, y: d.y };
    const bottom = d.page.margins.bottom;
    d.page.margins.bottom = 0; // drawing in the margin must not start a new page
    let nameX = MARGIN;
    if (this.branding.logo !== null) {
      try {
        d.image(this.branding.logo.bytes, MARGIN, MARGIN - 10, { fit: [80, 30] });
        nameX = MARGIN + 90;
      } catch {
        // an unreadable logo is left out rather than failing the document
      }
    }
    d.fillColor(this.branding.primaryColor).font('Helvetica-Bold').fontSize(12).text(pdfText(this.branding.name), nameX, MARGIN, { lineBreak: false });
    d.moveTo(MARGIN, MARGIN + 28).lineTo(d.page.width - MARGIN, MARGIN + 28).lineWidth(2).strokeColor(this.branding.accentColor).stroke();
    d.fillColor('#6b7280').font('Helvetica').fontSize(8);
    d.text(pdfText(this.branding.footer), MARGIN, d.page.height - MARGIN, { lineBreak: false });
    d.text(`page ${this.#page}`, d.page.width - MARGIN - 60, d.page.height - MARGIN, { width: 60, align: 'right', lineBreak: false });
    d.page.margins.bottom = bottom;
    d.x = x;
    d.y = y;
    d.fillColor(this.branding.primaryColor);
  }

  heading(text: string): this {
    this.doc.moveDown(0.5).fillColor(this.branding.accentColor).font('Helvetica-Bold').fontSize(13).text(pdfText(text), MARGIN);
    this.doc.moveDown(0.3).fillColor(this.branding.primaryColor).font('Helvetica').fontSize(10);
    return this;
  }

  paragraph(text: string): this {
    this.doc.fillColor(this.branding.primaryColor).font('Helvetica').fontSize(10).text(pdfText(text), MARGIN, undefined, { width: this.doc.page.width - 2 * MARGIN });
    this.doc.moveDown(0.4);
    return this;
  }

  /** Label / value rows: the label in bold on its own line, the value below it (values may be long). */
  fields(rows: readonly (readonly [string, string])[]): this {
    const width = this.doc.page.width - 2 * MARGIN;
    for (const [label, value] of rows) {
      this.doc.fillColor('#374151').font('Helvetica-Bold').fontSize(9).text(pdfText(label), MARGIN, undefined, { width });
      this.doc.fillColor(this.branding.primaryColor).font('Helvetica').fontSize(10).text(pdfText(value === '' ? '-' : value), MARGIN, undefined, { width });
      this.doc.moveDown(0.3);
    }
    return this;
  }

  /** The finished PDF as a stream (ends the document). */
  stream(): Readable {
    this.doc.end();
    return this.doc as unknown as Readable;
  }

  /** The finished PDF in memory: for documents of a few pages. */
  async bytes(): Promise<Buffer> {
    const chunks: Buffer[] = [];
    const out = this.stream();
    for await (const chunk of out) chunks.push(chunk as Buffer);
    return Buffer.concat(chunks);
  }
}
