// Lint for the whole monorepo: typescript-eslint with type information, the import rules that
// make the package boundaries mechanical, and the project's comment rules
// (tools/eslint-plugin-svc). `pnpm lint` runs it; `pnpm test` runs it first.
import js from '@eslint/js';
import prettier from 'eslint-config-prettier';
import globals from 'globals';
import tseslint from 'typescript-eslint';
import svc from './tools/eslint-plugin-svc/index.js';

/** A `sha256:` digest string is built by release-core's helpers only: one format, one place. */
const NO_HAND_BUILT_DIGEST = [
  { selector: 'TemplateLiteral > TemplateElement:first-child[value.raw=/^sha256:/]', message: 'build sha256 digests with @svc/release-core, not by hand' },
  { selector: "BinaryExpression[operator='+'] > Literal[value='sha256:']", message: 'build sha256 digests with @svc/release-core, not by hand' },
];

export default tseslint.config(
  { ignores: ['**/dist/**', '**/node_modules/**', '**/__generated__/**', '**/.vitest-reports/**', '**/test-results/**', '.svc-data/**', '**/coverage/**'] },
  js.configs.recommended,
  ...tseslint.configs.recommendedTypeChecked,
  {
    languageOptions: { globals: { ...globals.node }, parserOptions: { projectService: true, tsconfigRootDir: import.meta.dirname } },
    plugins: { svc },
    rules: {
      'svc/spec-citation': 'error',
      'svc/no-history-comments': 'error',
      'svc/repo-path': 'error',
      // fastify handlers and interface implementations are async by contract, awaiting or not
      '@typescript-eslint/require-await': 'off',
      // kysely's expression builder and vitest's helpers are destructured by design
      '@typescript-eslint/unbound-method': 'off',
      // `Envelope | unknown` documents what an entry point expects while it accepts anything
      '@typescript-eslint/no-redundant-type-constituents': 'off',
      // values printed in messages are checked first; String() of an unknown is the intent there
      '@typescript-eslint/no-base-to-string': 'off',
      '@typescript-eslint/no-unused-vars': [
        'error',
        { argsIgnorePattern: '^_', varsIgnorePattern: '^_', destructuredArrayIgnorePattern: '^_', caughtErrors: 'none' },
      ],
    },
  },
  {
    // Tests read untyped JSON bodies and pass test doubles around.
    files: ['**/test/**/*.ts'],
    rules: {
      '@typescript-eslint/no-unsafe-assignment': 'off',
      '@typescript-eslint/no-unsafe-member-access': 'off',
      '@typescript-eslint/no-unsafe-argument': 'off',
      '@typescript-eslint/no-unsafe-call': 'off',
      '@typescript-eslint/no-unsafe-return': 'off',
      '@typescript-eslint/no-explicit-any': 'off',
    },
  },
  {
    files: ['apps/*/src/**/*.ts'],
    rules: { 'no-restricted-syntax': ['error', ...NO_HAND_BUILT_DIGEST] },
  },
  {
    // The server never reaches into the agent (a client of its API), in code or in tests.
    files: ['apps/server/**/*.ts', 'apps/server/**/*.mjs'],
    rules: {
      'no-restricted-imports': [
        'error',
        {
          patterns: [
            {
              group: ['**/agent/src/**', '**/agent/dist/**', '@svc/agent', '@svc/agent/*'],
              message: 'the server does not import the agent: end-to-end tests belong in apps/e2e',
            },
          ],
        },
      ],
    },
  },
  {
    // Routes validate, call a command or a query, and shape the answer: SQL lives in resources/<name>/queries.ts.
    files: ['apps/server/src/routes/**/*.ts', 'apps/server/src/http/**/*.ts'],
    rules: {
      'no-restricted-imports': [
        'error',
        { paths: [{ name: 'kysely', message: 'routes do not speak SQL: call resources/<name>/queries.ts or a command', allowTypeImports: false }] },
      ],
    },
  },
  {
    files: ['**/*.js', '**/*.mjs', '**/*.cjs', '**/*.d.mts', '**/vitest.config.ts', '**/vitest.*.config.ts', '**/vite.config.ts', 'vitest.shared.ts'],
    ...tseslint.configs.disableTypeChecked,
  },
  {
    // Code a benchmark runs inside the browser page.
    files: ['apps/console/bench/**/*.mjs'],
    languageOptions: { globals: { ...globals.browser } },
  },
  prettier,
);
