import { nodeCryptoProvider } from './node.js';
import type { CryptoProvider } from './provider.js';

/**
 * The provider used when an option does not name one. One import site, so a browser build can
 * alias `./node.js` away and set the noble provider here.
 */
export const defaultCryptoProvider: CryptoProvider = nodeCryptoProvider;
