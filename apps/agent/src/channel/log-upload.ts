import type { ChannelClients } from './client.js';
import type { UploadLogBundleResponse } from '@svc/device-proto';

const CHUNK = 64 * 1024;

/** Answers a log request: header, then the bundle in 64 KiB chunks (client stream). */
export function uploadLogBundle(clients: ChannelClients, logRequestId: string, contentType: string, bundle: Uint8Array): Promise<UploadLogBundleResponse> {
  return new Promise((resolve, reject) => {
    const stream = clients.device.uploadLogBundle((err, res) => (err ? reject(err) : resolve(res)));
    stream.write({ header: { logRequestId, contentType } });
    for (let at = 0; at < bundle.length; at += CHUNK) stream.write({ chunk: Buffer.from(bundle.subarray(at, at + CHUNK)) });
    stream.end();
  });
}
