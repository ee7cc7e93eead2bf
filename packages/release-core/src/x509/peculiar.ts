/**
 * The one entry to @peculiar/x509 in the service, exported as `@svc/release-core/x509`: the
 * server makes its CAs and TLS certificates with it, the agent its CSRs. Node only, and kept out
 * of the package's root export, so the console, the CLI and the pure-TypeScript X.509 reader
 * (certificate.ts, chain.ts) never load it. The package resolves to its CJS build, whose DI
 * container (tsyringe) needs the Reflect metadata API loaded first; and it must use the
 * platform's webcrypto (node's `globalThis.crypto`; crypto/node.ts stays the package's one
 * node:crypto import). Per-request certificate work does not come here: it is DER
 * (`@svc/release-core/der`).
 */
import 'reflect-metadata';
import * as x509 from '@peculiar/x509';

x509.cryptoProvider.set(globalThis.crypto as unknown as Parameters<typeof x509.cryptoProvider.set>[0]);

export { x509 };
