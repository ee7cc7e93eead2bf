import { execFileSync } from 'node:child_process';

/**
 * True when `tool` is on PATH. Missing: warn loudly naming the Debian package and skip,
 * unless CI=true, where a missing tool fails the run (docs/development.md).
 */
export function requireTool(tool: string, aptPackage: string = tool): boolean {
  try {
    execFileSync('sh', ['-c', `command -v ${tool}`], { stdio: 'ignore' });
    return true;
  } catch {
    if (process.env.CI === 'true') throw new Error(`${tool} is required in CI: apt-get install ${aptPackage}`);
    console.warn(`SKIPPING: ${tool} not found; install the Debian package "${aptPackage}" to run these tests`);
    return false;
  }
}
