// Stands in for @svc/release-core's crypto/node.js in the browser build (vite.config.ts):
// the same export name, backed by the pure-TypeScript noble provider (imported by path, not
// through the package index, which imports this module: no import cycle).
export { nobleCryptoProvider as nodeCryptoProvider } from '../../../../packages/release-core/dist/crypto/noble.js';
