/** The compliance pages: one chunk, loaded when one of them is first visited (routes.tsx). */
export { FindingsPage } from './findings';
export { VulnerabilityPage } from './vulnerability';
export { VexPage } from './vex';
export { FeedsPage } from './feeds';
export { CasesPage } from './cases';
export { CasePage } from './case';
export { ReportsPage } from './reports';
