import { spawnSync } from 'node:child_process';
import { describe, expect, it } from 'vitest';
import { AGENT_MAIN, SERVER_MAIN } from '../src/index.js';
import { tempDir } from '@svc/test-kit';

/**
 * The process settings the e2e suite relies on refuse bad values at start with one line
 * naming the variable and exit status 2 (server: SVC_DEVICE_CHECKIN_INTERVAL_S; agent:
 * SVC_AGENT_OS_BUNDLE, SVC_AGENT_REBOOT_COMMAND), before anything is opened or enrolled.
 */
function run(file: string, env: Record<string, string>) {
  return spawnSync(process.execPath, [file], { env: { PATH: process.env.PATH ?? '', ...env }, encoding: 'utf8', timeout: 30_000 });
}

describe('bad process settings', () => {
  it.each(['0', 'soon', '86401'])('server SVC_DEVICE_CHECKIN_INTERVAL_S=%s', async (value) => {
    const root = await tempDir('e2e-settings');
    try {
      const r = run(SERVER_MAIN, { SVC_DATA_DIR: root.dir, SVC_DEVICE_CHECKIN_INTERVAL_S: value });
      expect(r.status, r.stderr).toBe(2);
      expect(r.stderr.trim()).toBe('svc-server: SVC_DEVICE_CHECKIN_INTERVAL_S: must be an integer number of seconds 1..86400');
    } finally {
      await root.cleanup();
    }
  });

  it.each([
    ['SVC_AGENT_OS_BUNDLE', 'swupdate', 'svc-agent: SVC_AGENT_OS_BUNDLE: must be "rauc" or unset'],
    ['SVC_AGENT_REBOOT_COMMAND', 'reboot now', 'svc-agent: SVC_AGENT_REBOOT_COMMAND: must be a JSON array of strings (argv)'],
    ['SVC_AGENT_REBOOT_COMMAND', '[]', 'svc-agent: SVC_AGENT_REBOOT_COMMAND: must be a JSON array of strings (argv)'],
    ['SVC_AGENT_REBOOT_COMMAND', '["systemctl", 1]', 'svc-agent: SVC_AGENT_REBOOT_COMMAND: must be a JSON array of strings (argv)'],
  ])('agent %s=%s', async (name, value, line) => {
    const root = await tempDir('e2e-settings');
    try {
      const r = run(AGENT_MAIN, { SVC_AGENT_DATA_DIR: root.dir, [name]: value });
      expect(r.status, r.stderr).toBe(2);
      expect(r.stderr.trim().split('\n').at(-1)).toBe(line);
    } finally {
      await root.cleanup();
    }
  });
});
