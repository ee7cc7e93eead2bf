import type { FastifyRequest } from 'fastify';
import type { Multipart } from '@fastify/multipart';
import { ServerError } from '../errors/server-error.js';
import { frameworkError, oneLine } from '../errors/framework.js';
import { assertText } from '../input-text.js';

/** One part of a multipart body as a route reads it. */
export type UploadPart =
  | { type: 'field'; fieldname: string; value: string }
  | {
      type: 'file';
      fieldname: string;
      filename: string;
      /** The file's bytes; a body that breaks off inside the file fails with MALFORMED_MULTIPART. */
      bytes: AsyncIterable<Uint8Array>;
      /** True once the bytes were cut at the plugin's `fileSize` limit. */
      truncated(): boolean;
    };

/**
 * The parts of a multipart request (`request.parts()` of @fastify/multipart) under the
 * server's input rules, for every multipart route:
 * - a body busboy cannot read (no boundary parameter, a boundary that never appears, no
 *   closing boundary, malformed part headers) is MALFORMED_MULTIPART (400), wherever the
 *   parser notices it: between parts or inside a file's bytes;
 * - the plugin's limits stay 413 (MULTIPART_LIMIT, errors/framework.ts);
 * - field names, text values and file names follow the text rule (input-text.ts).
 */
export async function* multipartParts(request: FastifyRequest): AsyncGenerator<UploadPart> {
  const parts = request.parts();
  for (;;) {
    let next: IteratorResult<Multipart>;
    try {
      next = await parts.next();
    } catch (e) {
      throw multipartError(e);
    }
    if (next.done === true) return;
    const part = next.value;
    assertText(part.fieldname, 'multipart field name');
    if (part.type === 'file') {
      assertText(part.filename, `${part.fieldname}.filename`);
      const file = part.file;
      yield { type: 'file', fieldname: part.fieldname, filename: part.filename, bytes: guarded(file), truncated: () => file.truncated };
    } else {
      const value = String(part.value);
      assertText(value, part.fieldname);
      yield { type: 'field', fieldname: part.fieldname, value };
    }
  }
}

async function* guarded(file: AsyncIterable<unknown>): AsyncGenerator<Uint8Array> {
  try {
    for await (const chunk of file) yield chunk as Uint8Array;
  } catch (e) {
    throw multipartError(e);
  }
}

/** busboy's errors carry no code: every uncoded failure of the parser is the body's fault. */
function multipartError(e: unknown): unknown {
  if (e instanceof ServerError) return e;
  const framework = frameworkError(e);
  if (framework !== undefined) return new ServerError(framework.code, framework.message, { cause: e });
  const message = e instanceof Error ? e.message : String(e);
  return new ServerError('MALFORMED_MULTIPART', `body: malformed multipart/form-data (${oneLine(message).slice(0, 120)})`, { cause: e });
}
