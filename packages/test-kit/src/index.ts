// Helpers the tests of several packages (server, agent, CLI, console, e2e) and scripts/demo.mjs
// share. Private to the workspace: never published, never imported by product code.
export { readTar, untar, writeTar, type TarInput, type WriteTarOptions } from './tar.js';
export { issueCert, makeCa, makeDeviceCert, makeServerCert, type CertFiles } from './pki.js';
export { logIn, type SessionHeaders } from './session.js';
export { tempDir } from './temp.js';
