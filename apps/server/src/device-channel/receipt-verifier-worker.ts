/**
 * A receipt verification thread (receipt-verifier.ts): verifies each receipt it is handed with
 * the same pure function the main thread would run, and answers with the result or the
 * refusal's code and message.
 */
import { parentPort } from 'node:worker_threads';
import { isReleaseError } from '@svc/release-core';
import { isServerError } from '../errors/server-error.js';
import { verifyOne, type VerifierReply, type VerifierRequest } from './receipt-verifier.js';

if (parentPort === null) throw new Error('receipt-verifier-worker: not started as a worker thread');
const port = parentPort;

/** Requests arrive in batches (one message per turn of the main thread's event loop); so do the replies. */
port.on('message', (batch: VerifierRequest[]) => port.postMessage(batch.map(answer)));

function answer(m: VerifierRequest): VerifierReply {
  let reply: VerifierReply;
  try {
    reply = { id: m.id, ok: verifyOne(m.input) };
  } catch (e) {
    reply = {
      id: m.id,
      error: isReleaseError(e)
        ? { kind: 'release', code: e.code, message: e.message, issues: [...e.issues] }
        : isServerError(e)
          ? { kind: 'server', code: e.code, message: e.message }
          : { kind: 'error', message: e instanceof Error ? e.message : String(e) },
    };
  }
  return reply;
}
