/**
 * The JSON twin of a report, written as it is read: plain values are serialized as
 * `JSON.stringify` would, and every async iterable (a list read page by page) becomes an array
 * written item by item, so a report of any size never sits whole in memory. Keys keep their
 * order; `undefined` members are left out as in JSON.stringify.
 */

const FLUSH_AT = 64 * 1024;

function isAsyncIterable(v: unknown): v is AsyncIterable<unknown> {
  return typeof v === 'object' && v !== null && Symbol.asyncIterator in v;
}

/** Whether a list read page by page is anywhere inside `v` (else `v` is plain data, serialized at once). */
function holdsAsync(v: unknown): boolean {
  if (isAsyncIterable(v)) return true;
  if (Array.isArray(v)) return v.some(holdsAsync);
  if (typeof v === 'object' && v !== null && !(v instanceof Date)) return Object.values(v).some(holdsAsync);
  return false;
}

/** Writes `value` as JSON through `write` (awaited at every 64 KiB: the writer's backpressure). */
export async function writeJson(value: unknown, write: (chunk: string) => Promise<void>): Promise<void> {
  let buf = '';
  const emit = async (s: string) => {
    buf += s;
    if (buf.length >= FLUSH_AT) {
      const out = buf;
      buf = '';
      await write(out);
    }
  };
  const walk = async (v: unknown): Promise<void> => {
    // plain data (a finding, a summary) is one JSON.stringify: no await per value
    if (!holdsAsync(v)) await emit(JSON.stringify(v) ?? 'null');
    else if (isAsyncIterable(v) || Array.isArray(v)) {
      await emit('[');
      let first = true;
      for await (const item of v as AsyncIterable<unknown>) {
        if (!first) await emit(',');
        first = false;
        await walk(item === undefined ? null : item);
      }
      await emit(']');
    } else if (typeof v === 'object' && v !== null && !(v instanceof Date)) {
      await emit('{');
      let first = true;
      for (const [k, item] of Object.entries(v)) {
        if (item === undefined) continue;
        if (!first) await emit(',');
        first = false;
        await emit(`${JSON.stringify(k)}:`);
        await walk(item);
      }
      await emit('}');
    } else {
      await emit(JSON.stringify(v) ?? 'null');
    }
  };
  await walk(value);
  await emit('\n');
  if (buf !== '') await write(buf);
}
