import { chmod, writeFile } from 'node:fs/promises';
import { join } from 'node:path';

/**
 * Writes a fake `docker` on a PATH dir: it appends its argv (JSON) to `argv.log` and keeps
 * a tiny container table in `state.json`, enough to answer inspect/rename/rm like the real
 * CLI. There is no container engine here; the real command-line contract is tested beside it.
 */
export async function installFakeRuntime(binDir: string, name = 'docker'): Promise<{ log: string; state: string }> {
  const log = join(binDir, 'argv.log');
  const state = join(binDir, 'state.json');
  const script = `#!/usr/bin/env node
const fs = require('node:fs');
const argv = process.argv.slice(2);
fs.appendFileSync(${JSON.stringify(log)}, JSON.stringify(argv) + '\\n');
let s = { containers: {} };
try { s = JSON.parse(fs.readFileSync(${JSON.stringify(state)}, 'utf8')); } catch {}
const save = () => fs.writeFileSync(${JSON.stringify(state)}, JSON.stringify(s));
const [cmd, ...rest] = argv;
const last = rest[rest.length - 1];
switch (cmd) {
  case 'load': console.log('Loaded image: example/app:loaded'); break;
  case 'tag': break;
  case 'inspect': {
    const c = s.containers[last];
    if (!c) { console.error('Error: No such container: ' + last); process.exit(1); }
    const fmt = rest[rest.indexOf('--format') + 1];
    console.log(fmt.includes('svc.digest') ? c.digest : c.id);
    break;
  }
  case 'run': {
    const name = rest[rest.indexOf('--name') + 1];
    if (s.containers[name]) { console.error('Conflict'); process.exit(125); }
    const label = rest[rest.indexOf('--label') + 1];
    if (process.env.FAKE_RUNTIME_FAIL_RUN === name) { console.error('container exited'); process.exit(1); }
    s.containers[name] = { id: 'id-' + name, digest: label.split('=')[1], image: last, running: true };
    save(); break;
  }
  case 'stop': if (!s.containers[last]) process.exit(1); s.containers[last].running = false; save(); break;
  case 'start': if (!s.containers[last]) process.exit(1); s.containers[last].running = true; save(); break;
  case 'rename': { const [from, to] = rest; if (!s.containers[from] || s.containers[to]) process.exit(1); s.containers[to] = s.containers[from]; delete s.containers[from]; save(); break; }
  case 'rm': delete s.containers[last]; save(); break;
  default: console.error('unknown command ' + cmd); process.exit(2);
}
`;
  const file = join(binDir, name);
  await writeFile(file, script);
  await chmod(file, 0o755);
  return { log, state };
}
