// The public surface of @svc/release-core in a browser bundle (the `browser` export condition):
// everything index.ts exports but the node:crypto provider; the default provider is the noble
// one (package.json `imports` maps `#crypto/default` to crypto/default.browser.ts).
export * from './surface.js';
