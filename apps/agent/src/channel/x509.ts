/**
 * The one entry to @peculiar/x509 in the agent: its CJS build's DI container (tsyringe)
 * needs the Reflect metadata API loaded first, and it must use node's webcrypto.
 */
import 'reflect-metadata';
import { webcrypto } from 'node:crypto';
import * as x509 from '@peculiar/x509';

x509.cryptoProvider.set(webcrypto as unknown as Parameters<typeof x509.cryptoProvider.set>[0]);

export { x509 };
