/**
 * The one branded-document module of the server: every PDF it produces (Article 14 submissions,
 * the vulnerability and readiness reports) is drawn through `BrandedPdf`, so the tenant's report
 * branding (company name, logo, accent colour, footer) looks the same on all of them, and every
 * one of them is an archival PDF (docs/reports.md "Archival PDFs"):
 *
 * - PDF/A-3b (ISO 19005-3, level B) in PDF 1.7: pdfkit writes the sRGB output intent and the
 *   `pdfaid` XMP identification; this module writes the rest of the XMP (title, author = the
 *   branding's company, creation and modification dates) escaped, so a name with `&` or `<`
 *   keeps the metadata well-formed;
 * - every glyph from an embedded subset font: DejaVu Sans (Latin incl. Polish, Greek, Cyrillic,
 *   symbols such as "✓") and, for the characters it lacks, Noto Sans SC (Chinese and Japanese
 *   ideographs, kana); a character neither has is printed as U+FFFD, never as the `.notdef`
 *   glyph PDF/A forbids;
 * - the JSON twin embedded as an associated file (`AFRelationship /Data`, `attach`), so one file
 *   carries the document and its data;
 * - an outline (bookmarks) of the headings, and "page N of M" (pages are buffered until the end,
 *   see `end`);
 * - tagged: a structure tree (H1-H3, P, Table/TR/TH/TD, Figure) in reading order, the page
 *   header and footer and table backgrounds marked as artifacts (`tag`, `group`, `artifact`).
 *
 *   const pdf = new BrandedPdf({ title: 'Early warning', branding, generatedAt: now, documentId: digest });
 *   pdf.heading('Case');
 *   pdf.fields([['Kind', 'actively exploited vulnerability'], ['Aware at', timeText(awareAt)]]);
 *   pdf.paragraph('...');
 *   pdf.attach({ name: 'document.json', bytes, description: 'The document as canonical JSON' });
 *   const bytes = await pdf.bytes();   // or pdf.pipe(out) ... pdf.end() for large reports
 *
 * Text is laid out here rather than by pdfkit's line wrapper, for the rules an auditor reads by
 * (docs/reports.md "Layout"): a line breaks at spaces; a token wider than its column breaks after
 * a separator (`/ . - + _ : , ;`) before it breaks anywhere, and a token that fits its column is
 * never split; a heading is kept with what follows it (it is drawn with the first block after
 * it); a table breaks between rows and repeats its header on the next page.
 */
import { readFileSync } from 'node:fs';
import { createRequire } from 'node:module';
import type { Readable, Writable } from 'node:stream';
import type * as Fontkit from 'fontkit';
import type PDFKitDocument from 'pdfkit';

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
  /** IANA time zone the document's times are printed in (`UTC` when the branding names none). */
  timeZone: string;
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
 * name when no company name is set, and a footer naming the company and `footerNote`. The
 * branding has no time zone setting: documents print UTC and say so.
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
    timeZone: 'UTC',
  };
}

// ---------------------------------------------------------------------------------------------
// fonts

const require = createRequire(import.meta.url);

/**
 * pdfkit and fontkit, loaded when the first document is drawn: together about 15 MiB of a
 * process at rest that a server which never renders a PDF does not pay (docs/server.md,
 * "Memory of the embedded server").
 */
let pdfLibraries: { PDFDocument: typeof PDFKitDocument; fontkit: typeof Fontkit } | undefined;
function pdfLibs(): { PDFDocument: typeof PDFKitDocument; fontkit: typeof Fontkit } {
  return (pdfLibraries ??= { PDFDocument: require('pdfkit') as typeof PDFKitDocument, fontkit: require('fontkit') as typeof Fontkit });
}

/** The fonts every document embeds (subset): open licences, shipped by npm packages (docs/reports.md "Fonts"). */
export const FONT_FILES = {
  regular: require.resolve('dejavu-fonts-ttf/ttf/DejaVuSans.ttf'),
  bold: require.resolve('dejavu-fonts-ttf/ttf/DejaVuSans-Bold.ttf'),
  condensed: require.resolve('dejavu-fonts-ttf/ttf/DejaVuSansCondensed.ttf'),
  condensedBold: require.resolve('dejavu-fonts-ttf/ttf/DejaVuSansCondensed-Bold.ttf'),
  cjk: require.resolve('@expo-google-fonts/noto-sans-sc/400Regular/NotoSansSC_400Regular.ttf'),
} as const;

type Face = keyof typeof FONT_FILES;
/** Body text, headings; condensed for table cells and figure labels (more characters per column). */
export type TextStyle = Exclude<Face, 'cjk'>;

interface LoadedFont {
  bytes: Buffer;
  font: Fontkit.Font;
}

// read once per process; the CJK font (about 10 MB) only when a document first needs it
const loaded = new Map<Face, LoadedFont>();
function fontOf(face: Face): LoadedFont {
  let f = loaded.get(face);
  if (f === undefined) {
    const bytes = readFileSync(FONT_FILES[face]);
    f = { bytes, font: pdfLibs().fontkit.create(bytes) as Fontkit.Font };
    loaded.set(face, f);
  }
  return f;
}

// the fonts' PostScript names: pdfkit caches an opened font under its PostScript name, so a
// registered name that differs would open the font again on every switch
const FACE_NAMES: Record<Face, string> = {
  regular: 'DejaVuSans',
  bold: 'DejaVuSans-Bold',
  condensed: 'DejaVuSansCondensed',
  condensedBold: 'DejaVuSansCondensed-Bold',
  cjk: 'NotoSansSC-Regular',
};
const REPLACEMENT = '\uFFFD';

/** NFC text without control characters (newline kept, others a space). */
export function cleanText(s: string): string {
  let out = '';
  for (const ch of s.normalize('NFC')) {
    const cp = ch.codePointAt(0)!;
    if (ch === '\n') out += ch;
    else if (cp < 0x20 || (cp >= 0x7f && cp < 0xa0)) out += ' ';
    else out += ch;
  }
  return out;
}

interface Run {
  face: Face;
  text: string;
}

// per code point: the face that draws it (and the character drawn), and advance widths per face
const faceCache = new Map<string, [Face, string]>();
const advanceCache = new Map<Face, Map<string, number>>();

function faceFor(ch: string, style: TextStyle): [Face, string] {
  const key = `${style}${ch}`;
  let hit = faceCache.get(key);
  if (hit === undefined) {
    const cp = ch.codePointAt(0)!;
    if (ch === ' ' || fontOf(style).font.hasGlyphForCodePoint(cp)) hit = [style, ch];
    else if (fontOf('cjk').font.hasGlyphForCodePoint(cp)) hit = ['cjk', ch];
    else hit = [style, REPLACEMENT];
    faceCache.set(key, hit);
  }
  return hit;
}

/** The advance of `ch` in `face` at size 1 (kerning aside: fitting keeps a margin for it). */
function advance(face: Face, ch: string): number {
  let m = advanceCache.get(face);
  if (m === undefined) advanceCache.set(face, (m = new Map<string, number>()));
  let w = m.get(ch);
  if (w === undefined) {
    const f = fontOf(face).font;
    w = f.glyphForCodePoint(ch.codePointAt(0)!).advanceWidth / f.unitsPerEm;
    m.set(ch, w);
  }
  return w;
}

/** `text` split into runs of one face: the style's DejaVu face where it has the glyph, else Noto Sans SC, else U+FFFD. */
function runsOf(text: string, style: TextStyle): Run[] {
  const runs: Run[] = [];
  for (const ch of text) {
    const [face, out] = faceFor(ch, style);
    const last = runs[runs.length - 1];
    if (last !== undefined && last.face === face) last.text += out;
    else runs.push({ face, text: out });
  }
  return runs;
}

/** The width of `text` at `size` (sum of advances). */
function measure(text: string, style: TextStyle, size: number): number {
  let w = 0;
  for (const ch of text) {
    const [face, out] = faceFor(ch, style);
    w += advance(face, out);
  }
  return w * size;
}

/** Fitting keeps 2% for kerning, which the drawn width includes. */
const fits = (text: string, style: TextStyle, size: number, width: number): boolean => measure(text, style, size) * 1.02 <= width;

// ---------------------------------------------------------------------------------------------
// time, numbers and words as printed

const TIME_PARTS = new Map<string, Intl.DateTimeFormat>();

/** `2026-10-01 14:05 UTC`: an instant as printed (minutes; the JSON twin keeps the exact ISO instant). */
export function timeText(at: Date | string | null, timeZone = 'UTC'): string {
  if (at === null) return '-';
  const d = typeof at === 'string' ? new Date(at) : at;
  if (Number.isNaN(d.getTime())) return String(at);
  let f = TIME_PARTS.get(timeZone);
  if (f === undefined) {
    f = new Intl.DateTimeFormat('en-GB', { timeZone, year: 'numeric', month: '2-digit', day: '2-digit', hour: '2-digit', minute: '2-digit', hourCycle: 'h23' });
    TIME_PARTS.set(timeZone, f);
  }
  const p = Object.fromEntries(f.formatToParts(d).map((x) => [x.type, x.value]));
  return `${p.year}-${p.month}-${p.day} ${p.hour}:${p.minute} ${timeZone}`;
}

/** `1 release`, `3 releases`; `many` when the plural is not `one` + s. */
export function plural(n: number, one: string, many = `${one}s`): string {
  return `${n} ${n === 1 ? one : many}`;
}

/** `part` of `whole` as printed everywhere: `3 of 4 (75.0%)`, `0 of 0 (-)`. */
export function shareText(part: number, whole: number): string {
  return `${part} of ${whole} (${whole === 0 ? '-' : `${((100 * part) / whole).toFixed(1)}%`})`;
}

// ---------------------------------------------------------------------------------------------
// the document

export interface BrandedPdfOptions {
  title: string;
  subtitle?: string;
  branding: ReportBranding;
  generatedAt: Date;
  /** Printed under the title, e.g. the document's digest. */
  documentId?: string;
  /** Printed under the generation time: the instant the document's data was read as of. */
  dataCutoff?: { at: Date; note?: string };
  /** The XMP and Info subject: what the document is. */
  subject?: string;
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

/** A laid-out line: its runs (one face each) and width. */
interface Line {
  runs: (Run & { width: number })[];
  width: number;
}

const MARGIN = 50;
const TOP = MARGIN + 40;
const BOTTOM = MARGIN + 20;
const LEADING = 1.25;
const MUTED = '#6b7280';
const LABEL = '#374151';
const TRACK = '#e5e7eb';
const ZEBRA = '#f3f4f6';
// chart geometry: labels, then the bar area, then the value text
const LABEL_W = 150;
const BAR_X = MARGIN + LABEL_W + 8;
const BAR_W = 230;
const ROW_H = 15;
/** Where a line of a too-long token may break: after one of these. */
const SEPARATORS = new Set(['/', '.', '-', '+', '_', ':', ',', ';', '|', '@', '=', '&', '?']);
const isIdeograph = (ch: string): boolean => /[\u2e80-\u9fff\uac00-\ud7af\uf900-\ufaff\uff00-\uffef]/u.test(ch);

const xmlEscape = (s: string): string => s.replace(/&/g, '&amp;').replace(/</g, '&lt;').replace(/>/g, '&gt;').replace(/"/g, '&quot;');
const xmpDate = (d: Date): string => `${d.toISOString().slice(0, 19)}Z`;

interface PdfkitInternals {
  _addInfo(): void;
  appendXML(xml: string, newline?: boolean): void;
}

export class BrandedPdf {
  /** The underlying pdfkit document, for drawings this class does not offer. */
  readonly doc: PDFKit.PDFDocument;
  readonly branding: ReportBranding;
  readonly #title: string;
  /** Drawn with the next block (keep-with-next): headings and their lead notes. */
  #pending: { height: number; draw: () => void }[] = [];
  #section: PDFKit.PDFOutline | null = null;
  #ended = false;
  /** The structure tree's root element (`Document`): headings, paragraphs, tables and figures under it. */
  readonly #root: PDFKit.PDFStructureElement;

  constructor(o: BrandedPdfOptions) {
    this.branding = o.branding;
    this.#title = cleanText(o.title);
    const info = {
      Title: this.#title,
      Author: cleanText(o.branding.name),
      Subject: cleanText(o.subject ?? o.title),
      Creator: 'svc',
      Producer: 'svc (pdfkit)',
      // fixed dates make the bytes a function of the content and the generation time
      CreationDate: o.generatedAt,
      ModDate: o.generatedAt,
    };
    this.doc = new (pdfLibs().PDFDocument)({
      size: 'A4',
      margins: { top: TOP, bottom: BOTTOM, left: MARGIN, right: MARGIN },
      info,
      pdfVersion: '1.7',
      subset: 'PDF/A-3b',
      lang: 'en',
      displayTitle: true,
      bufferPages: true,
      tagged: true,
      font: fontOf('regular').bytes as unknown as string,
      autoFirstPage: false,
    });
    for (const face of Object.keys(FONT_FILES) as Face[]) {
      // registered lazily: pdfkit embeds a subset of a face only if the document uses it
      this.doc.registerFont(FACE_NAMES[face], face === 'cjk' ? FONT_FILES.cjk : fontOf(face).bytes);
    }
    this.#xmp(info, o.generatedAt);
    this.#root = this.doc.struct('Document');
    this.doc.addStructure(this.#root);
    this.doc.addPage();
    // the title on one line when it fits at 13 pt or more, else wrapped at 13 pt
    let titleSize = 18;
    while (titleSize > 13 && !fits(cleanText(o.title), 'bold', titleSize, this.contentWidth)) titleSize -= 0.5;
    this.tag('H1', () => this.#block(o.title, { style: 'bold', size: titleSize, color: o.branding.accentColor }));
    const subtitle = o.subtitle;
    if (subtitle !== undefined) this.tag('P', () => this.#block(subtitle, { size: 11 }));
    this.tag('P', () => this.#docInfo(o));
    this.doc.y += 10;
  }

  #docInfo(o: BrandedPdfOptions): void {
    this.#block(`Generated ${timeText(o.generatedAt, o.branding.timeZone)}${o.documentId === undefined ? '' : `  |  ${o.documentId}`}`, {
      size: 8,
      color: MUTED,
    });
    if (o.dataCutoff !== undefined) {
      this.#block(`Data cut-off ${timeText(o.dataCutoff.at, o.branding.timeZone)}${o.dataCutoff.note === undefined ? '' : `  |  ${o.dataCutoff.note}`}`, {
        size: 8,
        color: MUTED,
      });
    }
    this.#block(`Times are ${o.branding.timeZone}, to the minute; the embedded JSON twin has the exact instants.`, { size: 8, color: MUTED });
  }

  // ---- structure (tagged PDF)

  /** Draws `draw` as the content of a new structure element `type` (H1, P, TD, ...) under `parent`. */
  tag(type: string, draw: () => void, parent: PDFKit.PDFStructureElement = this.#root): void {
    const el = this.doc.struct(type);
    parent.add(el);
    const content = this.doc.markStructureContent(type);
    draw();
    this.doc.endMarkedContent();
    el.add(content);
    el.end();
  }

  /** A structure element holding others (Table, TR, Figure); `end()` it when its last child is added. */
  group(type: string, parent: PDFKit.PDFStructureElement = this.#root, options: PDFKit.Mixins.StructureElementOptions = {}): PDFKit.PDFStructureElement {
    const el = this.doc.struct(type, options);
    parent.add(el);
    return el;
  }

  /** Draws `draw` as an artifact: page furniture and backgrounds, not part of the content. */
  artifact(draw: () => void, type: 'Pagination' | 'Layout' = 'Layout'): void {
    this.doc.markContent('Artifact', { type });
    draw();
    this.doc.endMarkedContent();
  }

  /** The XMP pdfkit writes, with its values escaped and the modification date PDF/A wants beside the Info dictionary's. */
  #xmp(info: { Title: string; Author: string; Subject: string; Creator: string; Producer: string }, at: Date): void {
    const d = this.doc as unknown as PdfkitInternals;
    d._addInfo = () => {
      const alt = (v: string) => `<rdf:Alt><rdf:li xml:lang="x-default">${xmlEscape(v)}</rdf:li></rdf:Alt>`;
      d.appendXML(`
        <rdf:Description rdf:about="" xmlns:xmp="http://ns.adobe.com/xap/1.0/">
            <xmp:CreateDate>${xmpDate(at)}</xmp:CreateDate>
            <xmp:ModifyDate>${xmpDate(at)}</xmp:ModifyDate>
            <xmp:MetadataDate>${xmpDate(at)}</xmp:MetadataDate>
            <xmp:CreatorTool>${xmlEscape(info.Creator)}</xmp:CreatorTool>
        </rdf:Description>
        <rdf:Description rdf:about="" xmlns:dc="http://purl.org/dc/elements/1.1/">
            <dc:format>application/pdf</dc:format>
            <dc:title>${alt(info.Title)}</dc:title>
            <dc:creator><rdf:Seq><rdf:li>${xmlEscape(info.Author)}</rdf:li></rdf:Seq></dc:creator>
            <dc:description>${alt(info.Subject)}</dc:description>
        </rdf:Description>
        <rdf:Description rdf:about="" xmlns:pdf="http://ns.adobe.com/pdf/1.3/">
            <pdf:Producer>${xmlEscape(info.Producer)}</pdf:Producer>
        </rdf:Description>
        `);
    };
  }

  // ---- text layout

  #line(text: string, style: TextStyle, size: number): Line {
    const runs = runsOf(text, style).map((r) => ({ ...r, width: measure(r.text, r.face === 'cjk' ? style : style, size) }));
    return { runs, width: runs.reduce((a, r) => a + r.width, 0) };
  }

  /** Splits a token wider than `width`: after the last separator (or ideograph) that fits, else after the last character that fits. */
  static splitToken(token: string, style: TextStyle, size: number, width: number): string[] {
    const out: string[] = [];
    let rest = token;
    while (rest.length > 1 && !fits(rest, style, size, width)) {
      const chars = [...rest];
      let fit = 0;
      let soft = 0;
      let prefix = '';
      for (let i = 0; i < chars.length; i++) {
        prefix += chars[i];
        if (!fits(prefix, style, size, width)) break;
        fit = prefix.length;
        if ((SEPARATORS.has(chars[i]!) || isIdeograph(chars[i]!)) && i < chars.length - 1) soft = prefix.length;
      }
      const cut = soft > 0 ? soft : Math.max(fit, chars[0]!.length);
      out.push(rest.slice(0, cut));
      rest = rest.slice(cut);
    }
    out.push(rest);
    return out;
  }

  /** `text` broken into lines of at most `width` (see the module comment for the rules). */
  layout(text: string, o: { style?: TextStyle; size: number; width: number }): Line[] {
    const style = o.style ?? 'regular';
    const lines: string[] = [];
    for (const para of cleanText(text).split('\n')) {
      let cur = '';
      for (const word of para.split(' ')) {
        const candidate = cur === '' ? word : `${cur} ${word}`;
        if (fits(candidate, style, o.size, o.width)) {
          cur = candidate;
          continue;
        }
        if (cur !== '') lines.push(cur);
        const pieces = fits(word, style, o.size, o.width) ? [word] : BrandedPdf.splitToken(word, style, o.size, o.width);
        lines.push(...pieces.slice(0, -1));
        cur = pieces[pieces.length - 1]!;
      }
      lines.push(cur);
    }
    return lines.map((l) => this.#line(l, style, o.size));
  }

  /** Draws laid-out lines from `y` (their top); answers the y below them. */
  #drawLines(lines: readonly Line[], x: number, y: number, o: { size: number; color: string; width: number; align?: 'left' | 'right' }): number {
    const d = this.doc;
    const lh = o.size * LEADING;
    for (const line of lines) {
      let lx = o.align === 'right' ? x + o.width - line.width : x;
      const base = y + o.size * 0.95;
      for (const r of line.runs) {
        d.font(FACE_NAMES[r.face]).fontSize(o.size).fillColor(o.color).text(r.text, lx, base, { lineBreak: false, baseline: 'alphabetic' });
        lx += r.width;
      }
      y += lh;
    }
    return y;
  }

  /** One line at (x, y) cut to `width` with an ellipsis when longer. */
  #label(text: string, x: number, y: number, o: { size: number; color: string; width: number; style?: TextStyle }): number {
    const style = o.style ?? 'regular';
    let t = cleanText(text).replace(/\n/g, ' ');
    if (!fits(t, style, o.size, o.width)) {
      const chars = [...t];
      while (chars.length > 0 && !fits(`${chars.join('')}…`, style, o.size, o.width)) chars.pop();
      t = `${chars.join('')}…`;
    }
    const line = this.#line(t, style, o.size);
    this.#drawLines([line], x, y, { size: o.size, color: o.color, width: o.width });
    return line.width;
  }

  /** A block of wrapped text across the content width at the cursor (no page logic: callers reserve). */
  #block(text: string, o: { style?: TextStyle; size: number; color?: string; x?: number; width?: number }): void {
    const x = o.x ?? MARGIN;
    const width = o.width ?? this.contentWidth;
    const lines = this.layout(text, { style: o.style ?? 'regular', size: o.size, width });
    this.doc.y = this.#drawLines(lines, x, this.doc.y, { size: o.size, color: o.color ?? this.branding.primaryColor, width });
    this.doc.x = MARGIN;
  }

  #blockHeight(text: string, o: { style?: TextStyle; size: number; width?: number }): number {
    return this.layout(text, { style: o.style ?? 'regular', size: o.size, width: o.width ?? this.contentWidth }).length * o.size * LEADING;
  }

  // ---- pages

  /** The width between the margins. */
  get contentWidth(): number {
    return this.doc.page.width - 2 * MARGIN;
  }

  get #bottom(): number {
    return this.doc.page.height - BOTTOM;
  }

  /**
   * Makes room for a block of `height` points and the headings waiting for it: a new page unless
   * they all fit (or the page is still empty), then the headings are drawn.
   */
  reserve(height: number): this {
    const pending = this.#pending;
    this.#pending = [];
    const total = pending.reduce((a, p) => a + p.height, 0) + height;
    if (this.doc.y + total > this.#bottom && this.doc.y > TOP + 1) this.doc.addPage();
    for (const p of pending) p.draw();
    return this;
  }

  /** Starts a new page unless `height` points fit above the bottom margin (and draws waiting headings). */
  ensureSpace(height: number): this {
    return this.reserve(height);
  }

  /** A section heading (a top-level bookmark), drawn with the block that follows it. */
  heading(text: string): this {
    const size = 13;
    const height = 8 + this.#blockHeight(text, { style: 'bold', size }) + 4;
    this.#pending.push({
      height,
      draw: () => {
        if (this.doc.y > TOP + 1) this.doc.y += 8;
        this.#section = this.doc.outline.addItem(cleanText(text));
        this.tag('H2', () => this.#block(text, { style: 'bold', size, color: this.branding.accentColor }));
        this.doc.y += 4;
      },
    });
    return this;
  }

  /** A heading under the current section (a nested bookmark), drawn with the block that follows it. */
  subheading(text: string): this {
    const size = 10;
    const height = 4 + this.#blockHeight(text, { style: 'bold', size }) + 2;
    this.#pending.push({
      height,
      draw: () => {
        this.doc.y += 4;
        (this.#section ?? this.doc.outline).addItem(cleanText(text));
        this.tag('H3', () => this.#block(text, { style: 'bold', size }));
        this.doc.y += 2;
      },
    });
    return this;
  }

  paragraph(text: string): this {
    this.reserve(this.#blockHeight(text, { size: 10 }));
    this.tag('P', () => this.#block(text, { size: 10 }));
    this.doc.y += 4;
    return this;
  }

  /** A small muted line (notes, definitions); `keepWithNext` holds it with the following block like a heading. */
  note(text: string, o: { keepWithNext?: boolean } = {}): this {
    const height = this.#blockHeight(text, { size: 8 }) + 3;
    const draw = () => {
      this.tag('P', () => this.#block(text, { size: 8, color: MUTED }));
      this.doc.y += 3;
    };
    if (o.keepWithNext === true) this.#pending.push({ height, draw });
    else {
      this.reserve(height);
      draw();
    }
    return this;
  }

  /** Label / value rows: the label in bold on its own line, the value below it (values may be long). */
  fields(rows: readonly (readonly [string, string])[]): this {
    for (const [label, raw] of rows) {
      const value = raw === '' ? '-' : raw;
      // a label is never left at the foot of a page without its value
      this.reserve(this.#blockHeight(label, { style: 'bold', size: 9 }) + this.#blockHeight(value, { size: 10 }) + 3);
      this.tag('P', () => {
        this.#block(label, { style: 'bold', size: 9, color: LABEL });
        this.#block(value, { size: 10 });
      });
      this.doc.y += 3;
    }
    return this;
  }

  /**
   * Label / value rows on one line each: the label left, the value in bold at a fixed column
   * (text extraction keeps each pair on one line). For figures a reader compares.
   */
  figures(rows: readonly (readonly [string, string])[]): this {
    const d = this.doc;
    const valueWidth = this.contentWidth - 252;
    let table: PDFKit.PDFStructureElement | null = null;
    for (const [label, raw] of rows) {
      const value = raw === '' ? '-' : raw;
      const lines = this.layout(value, { style: 'bold', size: 9, width: valueWidth });
      const h = Math.max(13, lines.length * 9 * LEADING + 2);
      this.reserve(h);
      const y = d.y;
      table ??= this.group('Table');
      const tr = this.group('TR', table);
      this.tag('TH', () => this.#label(label, MARGIN, y, { size: 9, color: LABEL, width: 245, style: 'condensed' }), tr);
      this.tag('TD', () => this.#drawLines(lines, MARGIN + 252, y, { size: 9, color: this.branding.primaryColor, width: valueWidth }), tr);
      tr.end();
      d.y = y + h;
    }
    table?.end();
    d.y += 4;
    return this;
  }

  /** Starts a chart: room for it, its title, and a Figure element (alt text: the title) its drawing is marked in; answers the end. */
  #chartStart(title: string, rows: number): () => void {
    this.reserve(16 + rows * ROW_H);
    const figure = this.group('Figure', this.#root, { alt: `${cleanText(title)} (chart; every value is printed beside its bar)` });
    const content = this.doc.markStructureContent('Figure');
    this.#block(title, { style: 'bold', size: 9, color: LABEL });
    this.doc.y += 2;
    return () => {
      this.doc.endMarkedContent();
      figure.add(content);
      figure.end();
    };
  }

  #rowLabel(label: string, y: number): void {
    this.#label(label, MARGIN, y + 3, { size: 8, color: LABEL, width: LABEL_W });
  }

  #rowValue(text: string, x: number, y: number): void {
    this.#label(text, x, y + 3, { size: 8, color: this.branding.primaryColor, width: MARGIN + this.contentWidth - x });
  }

  /** Horizontal bars (vector rectangles) scaled to the largest value (or `max`), each value printed after its bar. */
  barChart(title: string, bars: readonly ChartBar[], o: { max?: number } = {}): this {
    const d = this.doc;
    const done = this.#chartStart(title, bars.length);
    const max = Math.max(o.max ?? 0, ...bars.map((b) => b.value), 1);
    for (const b of bars) {
      const y = d.y;
      this.#rowLabel(b.label, y);
      const w = b.value <= 0 ? 0 : Math.max(1, (BAR_W * b.value) / max);
      if (w > 0) d.rect(BAR_X, y + 2, w, ROW_H - 4).fill(b.color ?? this.branding.accentColor);
      this.#rowValue(`${b.value}${b.note === undefined ? '' : ` ${b.note}`}`, BAR_X + w + 6, y);
      d.y = y + ROW_H;
    }
    done();
    d.y += 6;
    return this;
  }

  /** Stacked horizontal bars: one row per label, one segment per series, scaled to the largest total; a legend below. */
  stackedBars(title: string, series: readonly ChartSeries[], rows: readonly { label: string; values: readonly number[] }[]): this {
    const d = this.doc;
    const done = this.#chartStart(title, rows.length + 1);
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
      d.y = y + ROW_H;
    }
    // legend
    const y = d.y + 2;
    let x = BAR_X;
    for (const s of series) {
      d.rect(x, y + 1, 8, 8).fill(s.color);
      const w = this.#label(s.name, x + 11, y + 1, { size: 7, color: LABEL, width: 200 });
      x += 11 + w + 12;
    }
    d.y = y + ROW_H + 4;
    done();
    return this;
  }

  /** Coverage bars: a grey track filled in the accent colour to `part / whole`, `n of m (p%)` after it. */
  coverage(title: string, rows: readonly CoverageRow[]): this {
    const d = this.doc;
    const done = this.#chartStart(title, rows.length);
    for (const r of rows) {
      const y = d.y;
      this.#rowLabel(r.label, y);
      d.rect(BAR_X, y + 2, BAR_W, ROW_H - 4).fill(TRACK);
      const w = r.whole === 0 ? 0 : (BAR_W * Math.min(r.part, r.whole)) / r.whole;
      if (w > 0) d.rect(BAR_X, y + 2, w, ROW_H - 4).fill(this.branding.accentColor);
      this.#rowValue(shareText(r.part, r.whole), BAR_X + BAR_W + 6, y);
      d.y = y + ROW_H;
    }
    done();
    d.y += 6;
    return this;
  }

  /** A table whose rows are added as they arrive (`.row(...)`); the header repeats on every new page. */
  table(columns: readonly TableColumn[]): PdfTable {
    // the Table element is made with the first row, after the headings waiting for it: reading order
    return new PdfTable(this, () => this.group('Table'), columns, {
      layout: (text, o) => this.layout(text, o),
      draw: (lines, x, y, o) => this.#drawLines(lines, x, y, o),
    });
  }

  /**
   * Embeds `bytes` as an associated file of the document (`AFRelationship /Data`: the data the
   * document shows), listed in its attachments (`pdfdetach -list`).
   */
  attach(f: { name: string; bytes: Uint8Array; description: string; mime?: string; at: Date }): this {
    this.doc.file(Buffer.from(f.bytes.buffer, f.bytes.byteOffset, f.bytes.byteLength), {
      name: f.name,
      type: f.mime ?? 'application/json',
      description: f.description,
      creationDate: f.at,
      modifiedDate: f.at,
      relationship: 'Data',
    } as PDFKit.Mixins.PDFAttachmentOptions);
    return this;
  }

  /** Header (logo, company name, accent rule) and footer (branding footer, page N of M) on every page, drawn at the end. */
  #decorate(): void {
    const d = this.doc;
    const range = d.bufferedPageRange();
    const pages = range.count;
    for (let i = range.start; i < range.start + pages; i++) {
      d.switchToPage(i);
      d.markContent('Artifact', { type: 'Pagination' });
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
      this.#label(this.branding.name, nameX, MARGIN - 2, {
        size: 12,
        style: 'bold',
        color: this.branding.primaryColor,
        width: this.contentWidth - (nameX - MARGIN),
      });
      d.moveTo(MARGIN, MARGIN + 28)
        .lineTo(d.page.width - MARGIN, MARGIN + 28)
        .lineWidth(2)
        .strokeColor(this.branding.accentColor)
        .stroke();
      const y = d.page.height - MARGIN;
      this.#label(this.branding.footer, MARGIN, y, { size: 8, color: MUTED, width: this.contentWidth - 90 });
      const page = `page ${i + 1} of ${pages}`;
      const line = this.#line(page, 'regular', 8);
      this.#drawLines([line], d.page.width - MARGIN - 80, y, { size: 8, color: MUTED, width: 80, align: 'right' });
      d.page.margins.bottom = bottom;
      d.endMarkedContent();
    }
  }

  #finish(): void {
    if (this.#ended) return;
    this.#ended = true;
    if (this.#pending.length > 0) this.reserve(0);
    this.#root.end();
    this.#decorate();
    this.doc.end();
  }

  /** Streams the document into `out` (pipe before drawing); `end()` finishes it. */
  pipe(out: Writable): this {
    this.doc.pipe(out);
    return this;
  }

  /**
   * Ends a piped document: the page decorations (page N of M) are drawn on the buffered pages,
   * then every page and the fonts, outline and metadata go to the output given to `pipe`.
   */
  end(): void {
    this.#finish();
  }

  /** The finished PDF as a stream (ends the document). */
  stream(): Readable {
    this.#finish();
    return this.doc;
  }

  /** The finished PDF in memory: for documents of a few pages. */
  async bytes(): Promise<Buffer> {
    const chunks: Buffer[] = [];
    const out = this.stream();
    for await (const chunk of out) chunks.push(chunk as Buffer);
    return Buffer.concat(chunks);
  }

  /** The document's title (its Info, XMP and first line). */
  get title(): string {
    return this.#title;
  }
}

const CELL_PAD = 3;
const TABLE_FONT = 7.5;

interface TableTools {
  layout(text: string, o: { style?: TextStyle; size: number; width: number }): Line[];
  draw(lines: readonly Line[], x: number, y: number, o: { size: number; color: string; width: number; align?: 'left' | 'right' }): number;
}

/**
 * A table of a `BrandedPdf`: header in the accent colour, zebra rows, wrapped cells. It breaks
 * between rows only (a row and its detail line stay on one page) and draws its header again at
 * the top of each new page; the header is drawn with the first row, so a table never starts
 * with its header alone at the foot of a page.
 */
export class PdfTable {
  readonly #pdf: BrandedPdf;
  readonly #columns: readonly TableColumn[];
  readonly #tools: TableTools;
  /** The table's structure element: a TR per row, the header's cells TH, the repeated header an artifact. */
  #element: PDFKit.PDFStructureElement | null = null;
  readonly #newElement: () => PDFKit.PDFStructureElement;
  #rows = 0;

  constructor(pdf: BrandedPdf, element: () => PDFKit.PDFStructureElement, columns: readonly TableColumn[], tools: TableTools) {
    this.#pdf = pdf;
    this.#newElement = element;
    this.#columns = columns;
    this.#tools = tools;
  }

  #widths(): number[] {
    return this.#columns.map((c) => c.share * this.#pdf.contentWidth);
  }

  #cells(cells: readonly string[], style: TextStyle): { lines: Line[][]; height: number } {
    const widths = this.#widths();
    const lines = cells.map((c, i) =>
      this.#tools.layout(c === '' ? '-' : c, { style: style === 'bold' ? 'condensedBold' : 'condensed', size: TABLE_FONT, width: widths[i]! - 2 * CELL_PAD }),
    );
    return { lines, height: Math.max(...lines.map((l) => l.length), 1) * TABLE_FONT * LEADING + 2 * CELL_PAD };
  }

  /** The cells of one row; `cell` is the structure element type of each (TH, TD), none when the row is an artifact. */
  #drawCells(lines: Line[][], y: number, h: number, o: { color: string; fill?: string; tr?: PDFKit.PDFStructureElement; cell?: 'TH' | 'TD' }): void {
    const pdf = this.#pdf;
    const widths = this.#widths();
    const fill = o.fill;
    if (fill !== undefined) {
      const background = () => pdf.doc.rect(MARGIN, y, pdf.contentWidth, h).fill(fill);
      if (o.tr === undefined) background();
      else pdf.artifact(background);
    }
    let x = MARGIN;
    lines.forEach((cell, i) => {
      const cx = x;
      const draw = () =>
        this.#tools.draw(cell, cx + CELL_PAD, y + CELL_PAD, {
          size: TABLE_FONT,
          color: o.color,
          width: widths[i]! - 2 * CELL_PAD,
          align: this.#columns[i]!.align ?? 'left',
        });
      if (o.tr === undefined || o.cell === undefined) draw();
      else pdf.tag(o.cell, draw, o.tr);
      x += widths[i]!;
    });
  }

  #header(): void {
    const d = this.#pdf.doc;
    const h = this.#cells(
      this.#columns.map((c) => c.header),
      'bold',
    );
    const y = d.y;
    const o = { color: '#ffffff', fill: this.#pdf.branding.accentColor };
    // the header row: a TR of TH cells the first time, an artifact when repeated on a new page
    if (this.#rows === 0) {
      this.#element = this.#newElement();
      const tr = this.#pdf.group('TR', this.#element);
      this.#drawCells(h.lines, y, h.height, { ...o, tr, cell: 'TH' });
      tr.end();
    } else this.#pdf.artifact(() => this.#drawCells(h.lines, y, h.height, o), 'Pagination');
    d.y = y + h.height;
  }

  /**
   * One row; `color` for the text (e.g. a known-exploited row), bold when asked; `detail` is a
   * full-width line under the cells (a finding's summary, vector, devices), kept with the row.
   */
  row(cells: readonly string[], o: { color?: string; bold?: boolean; detail?: string } = {}): this {
    const d = this.#pdf.doc;
    const style: TextStyle = o.bold === true ? 'bold' : 'regular';
    const body = this.#cells(cells, style);
    const detailWidth = this.#pdf.contentWidth - 2 * CELL_PAD;
    const detail = o.detail === undefined || o.detail === '' ? [] : this.#tools.layout(o.detail, { size: TABLE_FONT - 0.5, width: detailWidth });
    const detailH = detail.length === 0 ? 0 : detail.length * (TABLE_FONT - 0.5) * LEADING + CELL_PAD;
    const h = body.height + detailH;
    const header = this.#cells(
      this.#columns.map((c) => c.header),
      'bold',
    ).height;
    if (this.#rows === 0) {
      this.#pdf.reserve(header + h);
      this.#header();
    } else if (d.y + h > d.page.height - BOTTOM) {
      d.addPage();
      this.#header();
    }
    this.#rows += 1;
    const y = d.y;
    const color = o.color ?? this.#pdf.branding.primaryColor;
    const tr = this.#pdf.group('TR', this.#element ?? undefined);
    this.#drawCells(body.lines, y, h, { color, tr, cell: 'TD', ...(this.#rows % 2 === 0 ? { fill: ZEBRA } : {}) });
    if (detail.length > 0) {
      this.#pdf.tag(
        'TD',
        () => this.#tools.draw(detail, MARGIN + CELL_PAD, y + body.height - CELL_PAD / 2, { size: TABLE_FONT - 0.5, color: MUTED, width: detailWidth }),
        tr,
      );
    }
    tr.end();
    d.y = y + h;
    return this;
  }

  /** Ends the table with a little space below it. */
  end(): void {
    this.#element?.end();
    this.#pdf.doc.y += 8;
  }
}
