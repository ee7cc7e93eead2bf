import { nobleCryptoProvider } from './noble.js';
import type { CryptoProvider } from './provider.js';

/** default.ts for a browser bundle (package.json `imports`, `browser` condition): the noble provider. */
export const defaultCryptoProvider: CryptoProvider = nobleCryptoProvider;
