import { afterEach, describe, expect, it, vi } from 'vitest';
import { requireTool } from './helpers/tools.js';

// The shared guard every suite uses for system tools: skip loudly here, fail under CI.
describe('requireTool', () => {
  const ci = process.env.CI;
  afterEach(() => {
    if (ci === undefined) delete process.env.CI;
    else process.env.CI = ci;
    vi.restoreAllMocks();
  });

  it('finds a tool on PATH', () => {
    expect(requireTool('sh')).toBe(true);
  });

  it('skips loudly, naming the Debian package, when a tool is missing outside CI', () => {
    delete process.env.CI;
    const warn = vi.spyOn(console, 'warn').mockImplementation(() => {});
    expect(requireTool('svc-no-such-tool', 'svc-no-such-package')).toBe(false);
    expect(warn).toHaveBeenCalledWith(expect.stringMatching(/^SKIPPING: svc-no-such-tool not found; .*"svc-no-such-package"/));
  });

  it('fails when a tool is missing under CI=true', () => {
    process.env.CI = 'true';
    expect(() => requireTool('svc-no-such-tool', 'svc-no-such-package')).toThrow(/required in CI: apt-get install svc-no-such-package/);
  });
});
