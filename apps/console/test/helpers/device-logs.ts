/**
 * Answers a log request over the device channel (gRPC, mutual TLS) with a device's own
 * identity files, as an agent configured to collect logs does: the agent process started by
 * the harness is not given a log collector, so the test plays that part of the device.
 */
import { readFile } from 'node:fs/promises';
import { join } from 'node:path';
import { credentials } from '@grpc/grpc-js';
import { DeviceServiceClient } from '@svc/device-proto';

const TLS_NAME = 'device-channel.svc.internal';

export async function uploadDeviceLogs(agentDataDir: string, deviceAddr: string, logRequestId: string, bytes: Buffer): Promise<void> {
  const dir = join(agentDataDir, 'identity');
  const [key, cert, ca] = await Promise.all(['device.key', 'device.pem', 'server-ca.pem'].map((f) => readFile(join(dir, f))));
  const client = new DeviceServiceClient(deviceAddr, credentials.createSsl(ca!, key!, cert!), {
    'grpc.ssl_target_name_override': TLS_NAME,
    'grpc.default_authority': TLS_NAME,
  });
  try {
    await new Promise<void>((resolve, reject) => {
      const stream = client.uploadLogBundle((err) => (err ? reject(err) : resolve()));
      stream.write({ header: { logRequestId, contentType: 'text/plain' } });
      stream.write({ chunk: bytes });
      stream.end();
    });
  } finally {
    client.close();
  }
}
