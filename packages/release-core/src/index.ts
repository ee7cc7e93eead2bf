// The public surface of @svc/release-core (API.md) in Node. test/index.test.ts pins this list.
export * from './surface.js';
export { nodeCryptoProvider } from './crypto/node.js';
