/**
 * Images the node runs, written locally (no registry is reachable): one static binary per
 * image, in an OCI archive that `ctr images import` loads. Archives are reproducible, so one
 * written for a binary version is kept in the cache and reused.
 */
import { access } from 'node:fs/promises';
import { join } from 'node:path';
import { writeOciArchive, type ImageSpec, type LayerEntry } from '../../../scripts/oci/archive';

/** The unprivileged user the images run as unless a Pod says otherwise. */
export const NONROOT = 65532;

/** The sandbox image: the static `pause` that holds each Pod's namespaces. */
export function pauseImageSpec(ref: string, pause: Buffer): ImageSpec {
  return {
    ref,
    layers: [[{ type: 'file', path: '/pause', mode: 0o755, content: pause }]],
    // 65535 as upstream's pause image: the sandbox needs no privileges at all.
    config: { Entrypoint: ['/pause'], User: '65535:65535' },
  };
}

/** CoreDNS: the binary and nothing else; its Corefile comes from a ConfigMap. */
export function coreDnsImageSpec(ref: string, coredns: Buffer): ImageSpec {
  return {
    ref,
    layers: [[{ type: 'file', path: '/coredns', mode: 0o755, content: coredns }]],
    config: { Entrypoint: ['/coredns'], User: `${NONROOT}:${NONROOT}`, ExposedPorts: { '53/udp': {}, '53/tcp': {} } },
  };
}

/** What goes into a test image besides busybox. */
export interface TestImageExtras {
  /** Served by `httpd -h /www` as `/`. */
  readonly body: string;
  /** More static programs, e.g. kubectl at /bin/kubectl; each gets a layer of its own. */
  readonly programs?: readonly { readonly path: string; readonly content: Buffer }[];
}

/**
 * A busybox image: Debian's static busybox with a link per applet, for test Pods that serve
 * HTTP (`httpd`), resolve names (`nslookup`), fetch plain HTTP (`wget`) and try connections
 * (`nc`). busybox's own TLS client cannot talk to the API server (no cipher in common), so a
 * Pod that must reach it over TLS needs another program (kubectl).
 */
export function busyboxImageSpec(ref: string, busybox: Buffer, applets: readonly string[], extras: TestImageExtras): ImageSpec {
  const entries: LayerEntry[] = [
    { type: 'file', path: '/bin/busybox', mode: 0o755, content: busybox },
    ...applets.filter((a) => a !== 'busybox').map((a): LayerEntry => ({ type: 'symlink', path: `/bin/${a}`, target: 'busybox' })),
    { type: 'dir', path: '/tmp', mode: 0o1777 },
    { type: 'dir', path: '/www', mode: 0o755 },
    { type: 'file', path: '/www/index.html', mode: 0o644, content: Buffer.from(extras.body) },
  ];
  const programs = (extras.programs ?? []).map((p): LayerEntry[] => [{ type: 'file', path: p.path, mode: 0o755, content: p.content }]);
  return {
    ref,
    layers: [entries, ...programs],
    config: { Entrypoint: ['/bin/sh'], User: `${NONROOT}:${NONROOT}`, Env: ['PATH=/bin'], WorkingDir: '/' },
  };
}

async function exists(path: string): Promise<boolean> {
  try {
    await access(path);
    return true;
  } catch {
    return false;
  }
}

/**
 * Writes the archive of `spec` to `dir/<file>` unless it is already there, and returns its path.
 * `file` must change whenever the content does (name it after the binary's version).
 */
export async function cachedArchive(dir: string, file: string, spec: () => Promise<ImageSpec>): Promise<string> {
  const path = join(dir, file);
  if (!(await exists(path))) await writeOciArchive(await spec(), path);
  return path;
}
