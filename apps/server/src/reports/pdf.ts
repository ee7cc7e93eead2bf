/**
 * The one branded-document module of the server: every PDF it produces (Article 14 submissions,
 * the vulnerability and readiness reports) is drawn through `BrandedPdf`, so the tenant's report
 * branding (company name, logo, accent colour, footer) looks the same on all of them.
 *
 *   const pdf = new BrandedPdf({ title: 'Early warning', branding, generatedAt: now, documentId: digest });
 *   pdf.heading('Case');
 *   pdf.fields([['Kind', 'actively exploited vulnerability'], ['Aware at', '2026-10-01T10:00:00Z']]);
 *   pdf.paragraph('...');
 *   const bytes = await pdf.bytes();   // or pdf.stream() for large reports
 *
 * Long reports pipe the document into their output first (`pdf.pipe(out)`), draw section by
 * section as rows arrive (`figures`, `table(...).row(...)`, and charts drawn with pdfkit's
 * vector primitives: `barChart`, `stackedBars`, `coverage`), then `pdf.end()`.
 *
 * pdfkit (maintained, pure JavaScript, no headless browser to install or sandbox) writes the
 * PDF as a stream; pages are not buffered, so a long report stays small in memory. Text uses
 * the PDF standard fonts (Helvetica), whose encoding is Windows-1252: characters outside it are
 * printed as `?` rather than as a wrong glyph. The machine-readable twin of every document (its
 * JSON) carries the exact text.
 */
import type { Readable, Writable } from 'node:stream';
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
  /** Printed under the generation time: the instant the document's data was read as of. */
  dataCutoff?: { at: Date; note?: string };
}

/** One column of a `table`: its share of the content width (the shares add up to 1). */
export interface TableColumn {
  header: string;
  share: number;
  align?: 'left' | 'right';
}

/** One bar of a `barChart`. */
export interface ChartBar {
  label: string;
  value: number;
  /** `#rrggbb`; the accent colour when absent. */
  color?: string;
  /** Printed after the value, e.g. `(3 closed by VEX)`. */
  note?: string;
}

/** One series of a `stackedBars` chart (a segment of every row). */
export interface ChartSeries {
  name: string;
  color: string;
}

/** One row of a `coverage` chart: `part` of `whole`. */
export interface CoverageRow {
  label: string;
  part: number;
  whole: number;
}

/** `part` of `whole` as printed everywhere: `3 of 4 (75.0%)`, `0 of 0 (-)`. */
export function shareText(part: number, whole: number): string {
  return `${part} of ${whole} (${whole === 0 ? '-' : `${((100 * part) / whole).toFixed(1)}%`})`;
}

const MARGIN = 50;
const MUTED = '#6b7280';
const TRACK = '#e5e7eb';
const ZEBRA = '#f3f4f6';
// chart geometry: labels, then the bar area, then the value text
const LABEL_W = 150;
const BAR_X = MARGIN + LABEL_W + 8;
const BAR_W = 230;
const ROW_H = 15;

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
    this.doc
      .fillColor(MUTED)
      .font('Helvetica')
      .fontSize(8)
      .text(pdfText(`Generated ${o.generatedAt.toISOString()}${o.documentId === undefined ? '' : `  |  ${o.documentId}`}`));
    if (o.dataCutoff !== undefined) {
      this.doc.text(pdfText(`Data cut-off ${o.dataCutoff.at.toISOString()}${o.dataCutoff.note === undefined ? '' : `  |  ${o.dataCutoff.note}`}`));
    }
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
    d.moveTo(MARGIN, MARGIN + 28)
      .lineTo(d.page.width - MARGIN, MARGIN + 28)
      .lineWidth(2)
      .strokeColor(this.branding.accentColor)
      .stroke();
    d.fillColor(MUTED).font('Helvetica').fontSize(8);
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
    this.doc
      .fillColor(this.branding.primaryColor)
      .font('Helvetica')
      .fontSize(10)
      .text(pdfText(text), MARGIN, undefined, { width: this.doc.page.width - 2 * MARGIN });
    this.doc.moveDown(0.4);
    return this;
  }

  /** Label / value rows: the label in bold on its own line, the value below it (values may be long). */
  fields(rows: readonly (readonly [string, string])[]): this {
    const width = this.doc.page.width - 2 * MARGIN;
    for (const [label, value] of rows) {
      this.doc.fillColor('#374151').font('Helvetica-Bold').fontSize(9).text(pdfText(label), MARGIN, undefined, { width });
      this.doc
        .fillColor(this.branding.primaryColor)
        .font('Helvetica')
        .fontSize(10)
        .text(pdfText(value === '' ? '-' : value), MARGIN, undefined, { width });
      this.doc.moveDown(0.3);
    }
    return this;
  }

  /** The width between the margins. */
  get contentWidth(): number {
    return this.doc.page.width - 2 * MARGIN;
  }

  /** Starts a new page unless `height` points fit above the bottom margin. */
  ensureSpace(height: number): this {
    if (this.doc.y + height > this.doc.page.height - this.doc.page.margins.bottom) this.doc.addPage();
    return this;
  }

  /** A small muted line (notes, definitions). */
  note(text: string): this {
    this.doc.fillColor(MUTED).font('Helvetica').fontSize(8).text(pdfText(text), MARGIN, undefined, { width: this.contentWidth });
    this.doc.moveDown(0.3);
    return this;
  }

  /**
   * Label / value rows on one line each: the label left, the value in bold at a fixed column
   * (text extraction keeps each pair on one line). For figures a reader compares.
   */
  figures(rows: readonly (readonly [string, string])[]): this {
    const d = this.doc;
    const valueWidth = this.contentWidth - 260;
    for (const [label, raw] of rows) {
      const value = pdfText(raw === '' ? '-' : raw);
      const h = Math.max(13, d.font('Helvetica-Bold').fontSize(9).heightOfString(value, { width: valueWidth }) + 2);
      this.ensureSpace(h);
      const y = d.y;
      d.fillColor('#374151').font('Helvetica').fontSize(9).text(pdfText(label), MARGIN, y, { width: 250, lineBreak: false, ellipsis: true });
      d.fillColor(this.branding.primaryColor)
        .font('Helvetica-Bold')
        .fontSize(9)
        .text(value, MARGIN + 260, y, { width: valueWidth });
      d.x = MARGIN;
      d.y = y + h;
    }
    d.moveDown(0.3);
    return this;
  }

  #chartTitle(title: string, rows: number): void {
    this.ensureSpace(16 + rows * ROW_H);
    this.doc.fillColor('#374151').font('Helvetica-Bold').fontSize(9).text(pdfText(title), MARGIN, undefined, { width: this.contentWidth });
    this.doc.moveDown(0.2);
  }

  #rowLabel(label: string, y: number): void {
    this.doc
      .fillColor('#374151')
      .font('Helvetica')
      .fontSize(8)
      .text(pdfText(label), MARGIN, y + 3, { width: LABEL_W, lineBreak: false, ellipsis: true });
  }

  #rowValue(text: string, x: number, y: number): void {
    this.doc
      .fillColor(this.branding.primaryColor)
      .font('Helvetica')
      .fontSize(8)
      .text(pdfText(text), x, y + 3, { width: MARGIN + this.contentWidth - x, lineBreak: false, ellipsis: true });
  }

  /** Horizontal bars (vector rectangles) scaled to the largest value (or `max`), each value printed after its bar. */
  barChart(title: string, bars: readonly ChartBar[], o: { max?: number } = {}): this {
    const d = this.doc;
    this.#chartTitle(title, bars.length);
    const max = Math.max(o.max ?? 0, ...bars.map((b) => b.value), 1);
    for (const b of bars) {
      const y = d.y;
      this.#rowLabel(b.label, y);
      const w = b.value <= 0 ? 0 : Math.max(1, (BAR_W * b.value) / max);
      if (w > 0) d.rect(BAR_X, y + 2, w, ROW_H - 4).fill(b.color ?? this.branding.accentColor);
      this.#rowValue(`${b.value}${b.note === undefined ? '' : ` ${b.note}`}`, BAR_X + w + 6, y);
      d.x = MARGIN;
      d.y = y + ROW_H;
    }
    d.moveDown(0.5);
    return this;
  }

  /** Stacked horizontal bars: one row per label, one segment per series, scaled to the largest total; a legend below. */
  stackedBars(title: string, series: readonly ChartSeries[], rows: readonly { label: string; values: readonly number[] }[]): this {
    const d = this.doc;
    this.#chartTitle(title, rows.length + 1);
    const total = (r: { values: readonly number[] }) => r.values.reduce((a, b) => a + b, 0);
    const max = Math.max(1, ...rows.map(total));
    for (const r of rows) {
      const y = d.y;
      this.#rowLabel(r.label, y);
      let x = BAR_X;
      r.values.forEach((v, i) => {
        if (v <= 0) return;
        const w = Math.max(1, (BAR_W * v) / max);
        d.rect(x, y + 2, w, ROW_H - 4).fill(series[i]?.color ?? this.branding.accentColor);
        x += w;
      });
      this.#rowValue(String(total(r)), x + 6, y);
      d.x = MARGIN;
      d.y = y + ROW_H;
    }
    // legend
    const y = d.y + 2;
    let x = BAR_X;
    for (const s of series) {
      d.rect(x, y + 1, 8, 8).fill(s.color);
      d.fillColor('#374151')
        .font('Helvetica')
        .fontSize(7)
        .text(pdfText(s.name), x + 11, y + 1, { lineBreak: false });
      x += 11 + d.widthOfString(pdfText(s.name)) + 12;
    }
    d.x = MARGIN;
    d.y = y + ROW_H;
    d.moveDown(0.3);
    return this;
  }

  /** Coverage bars: a grey track filled in the accent colour to `part / whole`, `n of m (p%)` after it. */
  coverage(title: string, rows: readonly CoverageRow[]): this {
    const d = this.doc;
    this.#chartTitle(title, rows.length);
    for (const r of rows) {
      const y = d.y;
      this.#rowLabel(r.label, y);
      d.rect(BAR_X, y + 2, BAR_W, ROW_H - 4).fill(TRACK);
      const w = r.whole === 0 ? 0 : (BAR_W * Math.min(r.part, r.whole)) / r.whole;
      if (w > 0) d.rect(BAR_X, y + 2, w, ROW_H - 4).fill(this.branding.accentColor);
      this.#rowValue(shareText(r.part, r.whole), BAR_X + BAR_W + 6, y);
      d.x = MARGIN;
      d.y = y + ROW_H;
    }
    d.moveDown(0.5);
    return this;
  }

  /** A table whose rows are added as they arrive (`.row(...)`); the header repeats on every new page. */
  table(columns: readonly TableColumn[]): PdfTable {
    return new PdfTable(this, columns);
  }

  /** Streams the document into `out` as it is drawn (pipe before drawing a long document); `end()` finishes it. */
  pipe(out: Writable): this {
    this.doc.pipe(out);
    return this;
  }

  /** Ends a piped document: the last bytes go to the output given to `pipe`. */
  end(): void {
    this.doc.end();
  }

  /** The finished PDF as a stream (ends the document). */
  stream(): Readable {
    this.doc.end();
    return this.doc;
  }

  /** The finished PDF in memory: for documents of a few pages. */
  async bytes(): Promise<Buffer> {
    const chunks: Buffer[] = [];
    const out = this.stream();
    for await (const chunk of out) chunks.push(chunk as Buffer);
    return Buffer.concat(chunks);
  }
}

const CELL_PAD = 3;
const TABLE_FONT = 7.5;

/** A table of a `BrandedPdf`: header in the accent colour, zebra rows, wrapped cells, the header again after a page break. */
export class PdfTable {
  readonly #pdf: BrandedPdf;
  readonly #columns: readonly TableColumn[];
  #rows = 0;

  constructor(pdf: BrandedPdf, columns: readonly TableColumn[]) {
    this.#pdf = pdf;
    this.#columns = columns;
    pdf.ensureSpace(40);
    this.#header();
  }

  #widths(): number[] {
    return this.#columns.map((c) => c.share * this.#pdf.contentWidth);
  }

  #height(cells: readonly string[], font: string): number {
    const d = this.#pdf.doc;
    d.font(font).fontSize(TABLE_FONT);
    const widths = this.#widths();
    return Math.max(...cells.map((c, i) => d.heightOfString(pdfText(c === '' ? '-' : c), { width: widths[i]! - 2 * CELL_PAD })), TABLE_FONT) + 2 * CELL_PAD;
  }

  #draw(cells: readonly string[], o: { font: string; color: string; fill?: string; header?: boolean }): void {
    const d = this.#pdf.doc;
    const h = this.#height(cells, o.font);
    if (d.y + h > d.page.height - d.page.margins.bottom) {
      d.addPage();
      if (o.header !== true) this.#header();
    }
    const y = d.y;
    const widths = this.#widths();
    if (o.fill !== undefined) d.rect(MARGIN, y, this.#pdf.contentWidth, h).fill(o.fill);
    let x = MARGIN;
    cells.forEach((c, i) => {
      const col = this.#columns[i]!;
      d.fillColor(o.color)
        .font(o.font)
        .fontSize(TABLE_FONT)
        .text(pdfText(c === '' ? '-' : c), x + CELL_PAD, y + CELL_PAD, { width: widths[i]! - 2 * CELL_PAD, align: col.align ?? 'left' });
      x += widths[i]!;
    });
    d.x = MARGIN;
    d.y = y + h;
  }

  #header(): void {
    this.#draw(
      this.#columns.map((c) => c.header),
      { font: 'Helvetica-Bold', color: '#ffffff', fill: this.#pdf.branding.accentColor, header: true },
    );
  }

  /** One row; `color` for the text (e.g. a known-exploited row), bold when asked. */
  row(cells: readonly string[], o: { color?: string; bold?: boolean } = {}): this {
    this.#rows += 1;
    this.#draw(cells, {
      font: o.bold === true ? 'Helvetica-Bold' : 'Helvetica',
      color: o.color ?? this.#pdf.branding.primaryColor,
      ...(this.#rows % 2 === 0 ? { fill: ZEBRA } : {}),
    });
    return this;
  }

  /** Ends the table with a little space below it. */
  end(): void {
    this.#pdf.doc.moveDown(0.6);
  }
}
