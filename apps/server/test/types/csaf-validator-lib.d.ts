/**
 * Types of the parts of @secvisogram/csaf-validator-lib (plain JavaScript, no declarations) the
 * CSAF suite imports: its README's `DocumentTest` and `Result` interfaces.
 */
declare module '@secvisogram/csaf-validator-lib/validate.js' {
  export interface Finding {
    message: string;
    instancePath: string;
  }
  export interface TestResult {
    isValid?: boolean;
    errors?: Finding[];
    warnings?: Finding[];
    infos?: Finding[];
  }
  export type DocumentTest = (doc: unknown) => TestResult | Promise<TestResult>;
  export interface Result {
    isValid: boolean;
    tests: { name: string; isValid: boolean; errors: Finding[]; warnings: Finding[]; infos: Finding[] }[];
  }
  export default function validate(tests: readonly DocumentTest[], doc: unknown): Promise<Result>;
}

declare module '@secvisogram/csaf-validator-lib/schemaTests.js' {
  import type { DocumentTest } from '@secvisogram/csaf-validator-lib/validate.js';
  export const csaf_2_0: DocumentTest;
  export const csaf_2_0_strict: DocumentTest;
}

declare module '@secvisogram/csaf-validator-lib/mandatoryTests.js' {
  import type { DocumentTest } from '@secvisogram/csaf-validator-lib/validate.js';
  const tests: Record<string, DocumentTest>;
  export = tests;
}

declare module '@secvisogram/csaf-validator-lib/optionalTests.js' {
  import type { DocumentTest } from '@secvisogram/csaf-validator-lib/validate.js';
  const tests: Record<string, DocumentTest>;
  export = tests;
}
