import { nodeCryptoProvider } from './node.js';
import type { CryptoProvider } from './provider.js';

/**
 * The provider used when an option does not name one. Modules import it as `#crypto/default`:
 * package.json's `imports` resolve that here, and to default.browser.ts under the `browser`
 * condition (a bundler building for the browser), so a browser bundle never loads node:crypto.
 */
export const defaultCryptoProvider: CryptoProvider = nodeCryptoProvider;
