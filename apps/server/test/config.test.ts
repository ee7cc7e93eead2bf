import { describe, expect, it } from 'vitest';
import { ConfigError, parseConfig } from '../src/config.js';

describe('config (contracts 6)', () => {
  it('defaults', () => {
    const c = parseConfig({}, '/srv');
    expect(c).toEqual({
      dataDir: '/srv/.svc-data',
      databaseUrl: undefined,
      databaseSchema: 'public',
      httpAddr: { host: '127.0.0.1', port: 8080 },
      deviceAddr: { host: '127.0.0.1', port: 8443 },
      admin: undefined,
    });
  });

  it('all settings', () => {
    const c = parseConfig(
      {
        SVC_DATA_DIR: 'data',
        SVC_DATABASE_URL: 'postgres://u@h/db',
        SVC_HTTP_ADDR: '0.0.0.0:9000',
        SVC_DEVICE_ADDR: '[::1]:9443',
        SVC_ADMIN_EMAIL: 'a@b.c',
        SVC_ADMIN_PASSWORD: 'password1',
      },
      '/srv',
    );
    expect(parseConfig({ SVC_DATABASE_POOL_SIZE: '8' }).databasePoolSize).toBe(8);
    expect(parseConfig({ SVC_RECEIPT_VERIFY_THREADS: '0' }).receiptVerifyThreads).toBe(0);
    expect(parseConfig({ SVC_RECEIPT_VERIFY_THREADS: '3' }).receiptVerifyThreads).toBe(3);
    expect(parseConfig({}).receiptVerifyThreads).toBeUndefined();
    expect(parseConfig({}).databasePoolSize).toBeUndefined();
    expect(parseConfig({ SVC_DEVICE_MAX_CONNECTIONS: '20000', SVC_DEVICE_RETRY_AFTER_S: '15' })).toMatchObject({
      deviceMaxConnections: 20000,
      deviceRetryAfterS: 15,
    });
    expect(parseConfig({ SVC_BLOB_STORE: 'fs' }).blobStore).toBe('fs');
    expect(parseConfig({ SVC_BLOB_STORE: ' postgres ' }).blobStore).toBe('postgres');
    expect(parseConfig({}).blobStore).toBeUndefined();
    expect(parseConfig({ SVC_DEVICE_BUNDLE_ADDR: '127.0.0.1:8444' }).deviceBundleAddr).toEqual({ host: '127.0.0.1', port: 8444 });
    expect(parseConfig({ SVC_DEVICE_BUNDLE_ADDR: ' ' }).deviceBundleAddr).toBeUndefined();
    expect(c).toMatchObject({
      dataDir: '/srv/data',
      databaseUrl: 'postgres://u@h/db',
      httpAddr: { host: '0.0.0.0', port: 9000 },
      deviceAddr: { host: '::1', port: 9443 },
      admin: { email: 'a@b.c', password: 'password1' },
    });
  });

  it.each([
    [{ SVC_HTTP_ADDR: '8080' }, /^SVC_HTTP_ADDR: /],
    [{ SVC_DEVICE_ADDR: 'host:99999' }, /^SVC_DEVICE_ADDR: /],
    [{ SVC_DEVICE_BUNDLE_ADDR: '8444' }, /^SVC_DEVICE_BUNDLE_ADDR: /],
    [{ SVC_DATABASE_URL: 'mysql://x' }, /^SVC_DATABASE_URL: /],
    [{ SVC_ADMIN_EMAIL: 'a@b.c' }, /SVC_ADMIN_PASSWORD/],
    [{ SVC_ADMIN_EMAIL: 'nope', SVC_ADMIN_PASSWORD: 'password1' }, /^SVC_ADMIN_EMAIL: /],
    [{ SVC_ADMIN_EMAIL: 'a@b.c', SVC_ADMIN_PASSWORD: 'short' }, /^SVC_ADMIN_PASSWORD: /],
    [{ SVC_DATABASE_SCHEMA: 'Bad-Schema' }, /^SVC_DATABASE_SCHEMA: /],
    [{ SVC_DATABASE_POOL_SIZE: '1' }, /^SVC_DATABASE_POOL_SIZE: /],
    [{ SVC_DATABASE_POOL_SIZE: 'ten' }, /^SVC_DATABASE_POOL_SIZE: /],
    [{ SVC_RECEIPT_VERIFY_THREADS: '65' }, /^SVC_RECEIPT_VERIFY_THREADS: /],
    [{ SVC_RECEIPT_VERIFY_THREADS: '-1' }, /^SVC_RECEIPT_VERIFY_THREADS: /],
    [{ SVC_DEVICE_MAX_CONNECTIONS: '0' }, /^SVC_DEVICE_MAX_CONNECTIONS: /],
    [{ SVC_DEVICE_MAX_CONNECTIONS: 'many' }, /^SVC_DEVICE_MAX_CONNECTIONS: /],
    [{ SVC_DEVICE_RETRY_AFTER_S: '0' }, /^SVC_DEVICE_RETRY_AFTER_S: /],
    [{ SVC_DEVICE_RETRY_AFTER_S: '3601' }, /^SVC_DEVICE_RETRY_AFTER_S: /],
    [{ SVC_BLOB_STORE: 's3' }, /^SVC_BLOB_STORE: must be fs or postgres/],
  ])('refuses %j with one line naming the setting', (env, message) => {
    expect(() => parseConfig(env)).toThrow(ConfigError);
    expect(() => parseConfig(env)).toThrow(message);
  });
});
