/**
 * The console's accessible building blocks: native HTML elements (button, fieldset, table,
 * dialog, progress) with labels, live regions and focus handled here once.
 */
import { useMutation, useQueryClient, type QueryKey, type UseQueryResult } from '@tanstack/react-query';
import { useEffect, useId, useRef, useState, type ReactNode } from 'react';
import { useSearchParams } from 'react-router';
import { ApiError } from '../api/client';
import { useCan, type Permission } from '../api/session';

export function ErrorNote({ error }: { error: unknown }) {
  if (error === null || error === undefined) return null;
  const text = error instanceof ApiError ? error.message : error instanceof Error ? error.message : String(error);
  return (
    <p role="alert" className="error">
      {error instanceof ApiError && error.status === 403 ? 'Not allowed: ' : 'Error: '}
      {text}
    </p>
  );
}

export function Loading({ what }: { what: string }) {
  return (
    <p role="status" className="muted">
      Loading {what}…
    </p>
  );
}

/** Controls a role cannot use: disabled, with the reason shown next to them. */
export function Guard({ perm, children, legend }: { perm: Permission; children: ReactNode; legend?: string }) {
  const can = useCan(perm);
  const id = useId();
  return (
    <fieldset className="guard" disabled={!can.ok} aria-describedby={can.ok ? undefined : id}>
      {legend !== undefined && <legend>{legend}</legend>}
      {!can.ok && (
        <p id={id} className="reason">
          {can.reason}
        </p>
      )}
      {children}
    </fieldset>
  );
}

/** A button that asks first, in a modal <dialog> (focus trapped, Escape cancels). */
export function ConfirmButton(props: {
  label: string;
  question: string;
  confirm: string;
  onConfirm: () => void;
  danger?: boolean;
  disabled?: boolean;
  /** why the button is disabled: its title and accessible description */
  disabledReason?: string;
}) {
  const ref = useRef<HTMLDialogElement>(null);
  const titleId = useId();
  const reasonId = useId();
  const reason = props.disabled && props.disabledReason !== undefined ? props.disabledReason : undefined;
  return (
    <>
      <button
        type="button"
        className={props.danger ? 'danger' : undefined}
        disabled={props.disabled}
        title={reason}
        aria-describedby={reason !== undefined ? reasonId : undefined}
        onClick={() => ref.current?.showModal()}
      >
        {props.label}
      </button>
      {reason !== undefined && (
        <span id={reasonId} className="sr-only">
          {reason}
        </span>
      )}
      <dialog ref={ref} aria-labelledby={titleId}>
        <form method="dialog">
          <p id={titleId}>{props.question}</p>
          <div className="row">
            <button value="cancel" autoFocus>
              Cancel
            </button>
            <button
              type="button"
              className={props.danger ? 'danger' : 'primary'}
              onClick={() => {
                ref.current?.close();
                props.onConfirm();
              }}
            >
              {props.confirm}
            </button>
          </div>
        </form>
      </dialog>
    </>
  );
}

/** A secret shown once: read-only text, a copy button, and a warning it will not be shown again. */
export function SecretOnce({ label, secret }: { label: string; secret: string }) {
  const [copied, setCopied] = useState(false);
  const id = useId();
  return (
    <div className="secret" role="region" aria-labelledby={id}>
      <p id={id}>
        <strong>{label}</strong> — shown once; copy it now.
      </p>
      <div className="row">
        <input readOnly value={secret} aria-label={label} onFocus={(e) => e.currentTarget.select()} className="mono wide" />
        <button
          type="button"
          onClick={() =>
            void copyText(secret).then(
              () => setCopied(true),
              () => setCopied(false),
            )
          }
        >
          Copy
        </button>
        <span role="status">{copied ? 'Copied' : ''}</span>
      </div>
    </div>
  );
}

/**
 * `limit`/`offset` and filters kept in the URL, so a page can be linked and Back works. Two
 * lists on one page keep apart by `prefix` (`history.offset`, `receipts.offset`).
 */
export function useListParams(prefix = '') {
  const [params, setParams] = useSearchParams();
  const get = (k: string) => params.get(prefix + k) ?? '';
  const offset = Math.max(0, Number(params.get(`${prefix}offset`) ?? 0) || 0);
  const limit = Math.min(200, Math.max(1, Number(params.get(`${prefix}limit`) ?? 50) || 50));
  const set = (changes: Record<string, string | number | undefined>) => {
    const next = new URLSearchParams(params);
    for (const [k, v] of Object.entries(changes)) {
      if (v === undefined || v === '') next.delete(prefix + k);
      else next.set(prefix + k, String(v));
    }
    // a changed filter starts again at the first page
    if (!('offset' in changes)) next.delete(`${prefix}offset`);
    setParams(next);
  };
  return { get, offset, limit, set };
}

export type ListParams = ReturnType<typeof useListParams>;

/**
 * Sortable columns: `columns` maps a heading to the API's sort key; `current` is the key in
 * use (a leading `-` is descending). A heading becomes a button that sorts by its column,
 * ascending first and descending when pressed again; `aria-sort` says which column and way.
 */
export interface SortSpec {
  columns: Readonly<Record<string, string>>;
  current: string;
  onSort: (sort: string) => void;
}

/** A table with one header row; an empty heading is an actions column (named for screen readers). */
export function Table({
  head,
  caption,
  sortedBy,
  sort,
  busy,
  children,
}: {
  head: readonly string[];
  caption?: string;
  sortedBy?: string;
  sort?: SortSpec;
  busy?: boolean;
  children: ReactNode;
}) {
  const ariaSort = (h: string): 'ascending' | 'descending' | undefined => {
    if (sort === undefined) return h === sortedBy ? 'ascending' : undefined;
    const key = sort.columns[h];
    if (key === undefined) return undefined;
    if (sort.current === key) return 'ascending';
    if (sort.current === `-${key}`) return 'descending';
    return undefined;
  };
  return (
    <table aria-busy={busy}>
      {caption !== undefined && <caption className="sr-only">{caption}</caption>}
      <thead>
        <tr>
          {head.map((h, i) => {
            const key = sort?.columns[h];
            const way = ariaSort(h);
            return (
              <th key={i} scope="col" aria-sort={way}>
                {h === '' ? (
                  <span className="sr-only">Actions</span>
                ) : key !== undefined && sort !== undefined ? (
                  <button type="button" className="sort" onClick={() => sort.onSort(way === 'ascending' ? `-${key}` : key)}>
                    {h}
                    <span aria-hidden="true">{way === 'ascending' ? ' ▲' : way === 'descending' ? ' ▼' : ' ↕'}</span>
                    <span className="sr-only">{way === 'ascending' ? ', sort descending' : ', sort ascending'}</span>
                  </button>
                ) : (
                  h
                )}
              </th>
            );
          })}
        </tr>
      </thead>
      <tbody>{children}</tbody>
    </table>
  );
}

/** One page of a server-paginated list: loading, the error in words, the rows, the pager. */
export function Paged<T extends { total: number }>(props: {
  what: string;
  result: UseQueryResult<T>;
  list: ListParams;
  head: readonly string[];
  caption?: string;
  sortedBy?: string;
  sort?: SortSpec;
  total?: (data: T) => number;
  children: (data: T) => ReactNode;
}) {
  const { result, list } = props;
  if (result.isPending) return <Loading what={props.what} />;
  return (
    <>
      <ErrorNote error={result.error} />
      {result.data !== undefined && (
        <>
          <Table head={props.head} caption={props.caption} sortedBy={props.sortedBy} sort={props.sort} busy={result.isFetching}>
            {props.children(result.data)}
          </Table>
          <Pager
            label={props.what}
            total={props.total?.(result.data) ?? result.data.total}
            offset={list.offset}
            limit={list.limit}
            onPage={(offset) => list.set({ offset })}
          />
        </>
      )}
    </>
  );
}

/** A write that refreshes every query under the key `refresh` (e.g. `enrollTokenQueries.keys.lists`) when it succeeds. */
export function useWrite<A, R>(write: (arg: A) => Promise<R>, refresh: QueryKey) {
  const client = useQueryClient();
  return useMutation({ mutationFn: write, onSuccess: () => client.invalidateQueries({ queryKey: refresh }) });
}

export function Pager({
  total,
  offset,
  limit,
  onPage,
  label,
}: {
  total: number;
  offset: number;
  limit: number;
  onPage: (offset: number) => void;
  label: string;
}) {
  const last = Math.min(total, offset + limit);
  return (
    <nav className="pager" aria-label={`${label} pages`}>
      <span role="status">
        {total === 0 ? `No ${label}` : `${(offset + 1).toLocaleString()}–${last.toLocaleString()} of ${total.toLocaleString()} ${label}`}
      </span>
      <button type="button" disabled={offset === 0} onClick={() => onPage(Math.max(0, offset - limit))}>
        Previous page
      </button>
      <button type="button" disabled={last >= total} onClick={() => onPage(offset + limit)}>
        Next page
      </button>
    </nav>
  );
}

/** A search box that applies after typing pauses (the server filters; nothing is loaded whole). */
export function SearchBox({ label, value, onSearch }: { label: string; value: string; onSearch: (q: string) => void }) {
  const [text, setText] = useState(value);
  const id = useId();
  // the latest callback, without restarting the pause when the parent re-renders
  const search = useRef(onSearch);
  search.current = onSearch;
  useEffect(() => setText(value), [value]);
  useEffect(() => {
    if (text === value) return;
    const t = setTimeout(() => search.current(text), 300);
    return () => clearTimeout(t);
  }, [text, value]);
  return (
    <span className="field">
      <label htmlFor={id}>{label}</label>
      <input id={id} type="search" value={text} onChange={(e) => setText(e.target.value)} />
    </span>
  );
}

export function Select({
  label,
  value,
  options,
  onChange,
}: {
  label: string;
  value: string;
  options: readonly (readonly [string, string])[];
  onChange: (v: string) => void;
}) {
  const id = useId();
  return (
    <span className="field">
      <label htmlFor={id}>{label}</label>
      <select id={id} value={value} onChange={(e) => onChange(e.target.value)}>
        {options.map(([v, text]) => (
          <option key={v} value={v}>
            {text}
          </option>
        ))}
      </select>
    </span>
  );
}

/**
 * A labelled control. With `error` (the API's words about this field) the message is shown
 * under it; the control points at it with `aria-describedby={fieldErrorId(id)}`.
 */
export function Field({ label, children, hint, error }: { label: string; children: (id: string) => ReactNode; hint?: string; error?: string | undefined }) {
  const id = useId();
  return (
    <div className="field">
      <label htmlFor={id}>{label}</label>
      {children(id)}
      {hint !== undefined && <small className="muted">{hint}</small>}
      {error !== undefined && (
        <small id={fieldErrorId(id)} className="error" role="alert">
          {error}
        </small>
      )}
    </div>
  );
}

export const fieldErrorId = (id: string): string => `${id}-error`;

/**
 * The request field an API error names: `body.title: ...` (schema validation) or
 * `artifact_ids[0]: ...` (a command's check) name `title` and `artifact_ids`.
 */
export function erroredField(error: unknown): string | undefined {
  if (!(error instanceof ApiError) || error.status !== 400) return undefined;
  return /^(?:body\.)?([a-z_]+)[^:\s]*: /.exec(error.message)?.[1];
}

/** A state word; its class joins words with `_` (`rolled back` and `rolled_back` are both `badge-rolled_back`). */
export function Badge({ value }: { value: string }) {
  return <span className={`badge badge-${value.replace(/\s+/g, '_').replace(/[^a-z_-]/gi, '')}`}>{value.replace(/_/g, ' ')}</span>;
}

export function When({ at }: { at: string | null | undefined }) {
  if (!at) return <span className="muted">—</span>;
  const d = new Date(at);
  return <time dateTime={at}>{d.toLocaleString()}</time>;
}

/**
 * The versions that fix a finding's installed version (the API's `fixed_versions`); every fix
 * its records name, other release lines included, is the cell's title when that says more.
 */
export function FixedIn({ finding }: { finding: { fixed_versions: string[]; record_fixed_versions: string[] } }) {
  const all = finding.record_fixed_versions.join(', ');
  const title = all !== finding.fixed_versions.join(', ') && all !== '' ? `fixes the records name: ${all}` : undefined;
  return <td title={title}>{finding.fixed_versions.join(', ') || '—'}</td>;
}

export function Mono({ children }: { children: ReactNode }) {
  return <code className="mono">{children}</code>;
}

export function PageTitle({ children, actions }: { children: ReactNode; actions?: ReactNode }) {
  useEffect(() => {
    document.title = `${typeof children === 'string' ? children : 'svc'} · svc console`;
  }, [children]);
  return (
    <header className="page-title">
      <h1>{children}</h1>
      {actions}
    </header>
  );
}

/** A download of an API resource: a same-origin link, so the session cookie goes with it. */
export function Download({ href, children }: { href: string; children: ReactNode }) {
  return (
    <a className="button" href={href} download>
      {children}
    </a>
  );
}

/**
 * Writes `text` to the clipboard. The Clipboard API needs a secure context (https or
 * localhost); a console reached over plain http on another host falls back to a selected
 * textarea and the copy command.
 */
export async function copyText(text: string): Promise<void> {
  if (window.isSecureContext && navigator.clipboard !== undefined) return navigator.clipboard.writeText(text);
  const area = document.createElement('textarea');
  area.value = text;
  area.setAttribute('readonly', '');
  area.style.position = 'fixed';
  area.style.opacity = '0';
  document.body.appendChild(area);
  area.select();
  try {
    if (!document.execCommand('copy')) throw new Error('the browser refused to copy');
  } finally {
    area.remove();
  }
}

/** Copies `value` to the clipboard; says "Copied" (politely announced) until the next copy. */
export function CopyButton({ value, label }: { value: string; label: string }) {
  const [state, setState] = useState<'idle' | 'copied' | 'failed'>('idle');
  const copy = () => {
    copyText(value).then(
      () => setState('copied'),
      () => setState('failed'),
    );
  };
  return (
    <>
      <button type="button" className="copy" onClick={copy} aria-label={`Copy ${label}`}>
        Copy
      </button>
      <span className="copy-state" aria-live="polite">
        {state === 'copied' ? 'Copied' : state === 'failed' ? 'Copy failed: select the text instead' : ''}
      </span>
    </>
  );
}

/**
 * A digest or id that a row has no room for: `sha256:ab12cd34…` (the first 8 hex digits), the
 * full value on hover and to screen readers, and a copy button. `full` shows it whole.
 */
export function ShortId({ value, label = 'digest', full = false }: { value: string; label?: string; full?: boolean }) {
  const colon = value.indexOf(':');
  const short = full ? value : colon >= 0 && value.length > colon + 9 ? `${value.slice(0, colon + 9)}…` : value.length > 12 ? `${value.slice(0, 8)}…` : value;
  return (
    <span className="short-id">
      <code className="mono">{short === value ? value : <abbr title={value}>{short}</abbr>}</code> <CopyButton value={value} label={label} />
    </span>
  );
}
