export { requireTool } from '../../../../vitest.shared.js';
