import { useEffect, useId, useState } from 'react';

/** `filter: column N: problem` as the server words a refusal (docs/device-filter.md "Errors"). */
export function filterProblem(message: string | undefined): { column: number; problem: string } | undefined {
  const m = message === undefined ? null : /^filter: column (\d+): (.*)$/.exec(message);
  return m ? { column: Number(m[1]), problem: m[2]! } : undefined;
}

/**
 * The device filter box: the text is applied on submit (Enter or the button), never per
 * keystroke, and a refusal is shown under it with a caret at the column the server named.
 */
export function FilterBox({ value, error, onApply }: { value: string; error: string | undefined; onApply: (v: string) => void }) {
  const [text, setText] = useState(value);
  const id = useId();
  useEffect(() => setText(value), [value]);
  const p = filterProblem(error);
  return (
    <form
      className="field filter-box"
      onSubmit={(e) => {
        e.preventDefault();
        onApply(text.trim());
      }}
    >
      <label htmlFor={id}>Filter</label>
      <input
        id={id}
        type="text"
        spellCheck={false}
        placeholder='attributes.hw_model = "gw-3" and tags has "eu"'
        value={text}
        aria-invalid={p !== undefined}
        aria-describedby={p ? `${id}-error` : undefined}
        onChange={(e) => setText(e.target.value)}
      />
      <button type="submit">Apply</button>
      {p && (
        <div id={`${id}-error`} role="alert" className="filter-error">
          <p>
            Column {p.column}: {p.problem}
          </p>
          <pre aria-hidden="true">{`${value}\n${' '.repeat(Math.max(0, p.column - 1))}^`}</pre>
        </div>
      )}
    </form>
  );
}
