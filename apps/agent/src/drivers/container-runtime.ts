/**
 * The command lines of a container runtime CLI (docker and podman accept the same ones for
 * what we use). Built here, in one small adapter, so the contract is tested argv by argv.
 */
export type RuntimeName = 'docker' | 'podman';

export interface ContainerRuntimeCli {
  readonly binary: string;
  load(archive: string): string[];
  tag(source: string, ref: string): string[];
  /** Prints the svc.digest label of a container, or exits non-zero when there is none. */
  inspectDigest(container: string): string[];
  exists(container: string): string[];
  stop(container: string): string[];
  start(container: string): string[];
  rename(from: string, to: string): string[];
  remove(container: string): string[];
  run(container: string, image: string, digest: string): string[];
}

export function containerRuntimeCli(name: RuntimeName = 'docker', binary: string = name): ContainerRuntimeCli {
  return {
    binary,
    load: (archive) => [binary, 'load', '--input', archive],
    tag: (source, ref) => [binary, 'tag', source, ref],
    inspectDigest: (c) => [binary, 'inspect', '--type', 'container', '--format', '{{index .Config.Labels "svc.digest"}}', c],
    exists: (c) => [binary, 'inspect', '--type', 'container', '--format', '{{.Id}}', c],
    stop: (c) => [binary, 'stop', c],
    start: (c) => [binary, 'start', c],
    rename: (from, to) => [binary, 'rename', from, to],
    remove: (c) => [binary, 'rm', '--force', c],
    run: (c, image, digest) => [binary, 'run', '--detach', '--name', c, '--restart', 'unless-stopped', '--label', `svc.digest=${digest}`, image],
  };
}

/** `docker load` / `podman load` print the loaded reference on the last matching line. */
export function parseLoadedImage(stdout: string): string | null {
  const lines = stdout.split('\n').map((l) => l.trim());
  for (const line of lines.reverse()) {
    const m = /^Loaded image(?: ID)?\(?s?\)?:\s*(\S+)/.exec(line);
    if (m?.[1]) return m[1];
  }
  return null;
}
