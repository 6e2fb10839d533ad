/**
 * How to start, on this machine, the process the synthesized Deployment starts in a Pod: the
 * image's ENTRYPOINT (or the container's `command`), the container's `args` and `env`, with only
 * the changes a local run cannot do without. Pure, so the rules are table-tested; the tests and
 * benchmarks then fail when infra/ and operator/main.ts disagree about a flag, instead of
 * passing with flags of their own.
 */
import { isAbsolute, join, posix } from 'node:path';
import type { ImageConfig } from './dockerfile';

/** The parts of a container spec a local run reads. */
export interface ContainerLike {
  readonly name: string;
  readonly command?: readonly string[];
  readonly args?: readonly string[];
  readonly env?: readonly EnvVarLike[];
  readonly envFrom?: readonly unknown[];
}

/** A container `env` entry. */
export interface EnvVarLike {
  readonly name: string;
  readonly value?: string;
  readonly valueFrom?: { readonly fieldRef?: { readonly fieldPath: string } } & Readonly<Record<string, unknown>>;
}

/** The parts of a Deployment a local run reads. */
export interface DeploymentLike {
  readonly metadata: { readonly name: string; readonly namespace?: string };
  readonly spec: {
    readonly template: {
      readonly metadata?: { readonly annotations?: Readonly<Record<string, string>> };
      readonly spec: { readonly containers: readonly ContainerLike[] };
    };
  };
}

/**
 * Flags a local run may add although the Deployment does not pass them, each with the reason.
 * Any other flag can only be given a new value when the Deployment passes it already.
 */
export const LOCAL_ONLY_FLAGS: Readonly<Record<string, string>> = {
  kubeconfig: 'outside a Pod there is no in-cluster config',
  'poll-interval': 'tests poll faster than production',
  'drift-interval': 'tests check drift sooner than production',
  'log-level': 'debug logs explain a failed test',
  'leader-election-id': 'runs sharing one control plane need Leases of their own',
  'provider-qps': 'benchmarks raise the provider rate limit',
  'provider-burst': 'benchmarks raise the provider rate limit',
  'kube-api-http2': 'benchmarks compare the protocols to the API server',
  'watch-namespace': 'the conversion benchmark keeps the controllers off its objects',
  'conversion-webhook-port': 'the conversion benchmark serves the webhook, which the Deployment does not yet',
  'conversion-webhook-ip-sans': 'the API server calls a local webhook by its loopback address',
};

/** What a local run changes. */
export interface LocalRun {
  /** Local directory that holds what the image has in its WORKDIR. */
  readonly imageDir: string;
  /** Node binary to run in place of the image's. */
  readonly nodeBinary: string;
  /** Flag name (without dashes) -> value; see {@link LOCAL_ONLY_FLAGS} for what may be added. */
  readonly flags?: Readonly<Record<string, string>>;
  /**
   * Values of downward-API `fieldRef`s by fieldPath. `metadata.namespace` defaults to the
   * Deployment's namespace; every other fieldRef the container uses must be given.
   */
  readonly fieldRefs?: Readonly<Record<string, string>>;
  /** @default the `kubectl.kubernetes.io/default-container`, else the only container */
  readonly container?: string;
}

/** A process to spawn. */
export interface Invocation {
  readonly file: string;
  /** Node's own options, before the script. */
  readonly nodeArgs: readonly string[];
  /** The script, as a local path. */
  readonly script: string;
  /** The script as the image names it, relative to its WORKDIR. */
  readonly imageScript: string;
  /** The operator's flags. */
  readonly args: readonly string[];
  /** The complete environment: the image's ENV, then the container's env. */
  readonly env: Readonly<Record<string, string>>;
}

/** The node binary names an image may start; anything else cannot run here. */
const NODE_BINARIES = new Set(['node', '/nodejs/bin/node', '/usr/local/bin/node', '/usr/bin/node']);

/** The container `args` split into `--name` / `--name=value` flags, in order. */
function parseFlags(args: readonly string[]): { name: string; value?: string }[] {
  return args.map((arg) => {
    const m = /^--([a-z0-9][a-z0-9-]*)(?:=(.*))?$/s.exec(arg);
    // "--flag value" pairs cannot be told from a boolean flag and a positional: refuse them.
    if (!m?.[1]) throw new Error(`container arg "${arg}" is not of the form --name or --name=value`);
    return m[2] === undefined ? { name: m[1] } : { name: m[1], value: m[2] };
  });
}

function pickContainer(deployment: DeploymentLike, wanted: string | undefined): ContainerLike {
  const { containers } = deployment.spec.template.spec;
  const name =
    wanted ??
    deployment.spec.template.metadata?.annotations?.['kubectl.kubernetes.io/default-container'] ??
    (containers.length === 1 ? containers[0]?.name : undefined);
  const found = containers.find((c) => c.name === name);
  if (!found)
    throw new Error(
      `Deployment ${deployment.metadata.name}: no container ${name ? `"${name}"` : 'chosen'} (containers: ${containers.map((c) => c.name).join(', ')})`,
    );
  return found;
}

function resolveEnv(deployment: DeploymentLike, container: ContainerLike, run: LocalRun): Record<string, string> {
  if (container.envFrom?.length) throw new Error(`container ${container.name}: envFrom cannot be resolved locally`);
  const fieldRefs: Record<string, string> = {
    ...(deployment.metadata.namespace ? { 'metadata.namespace': deployment.metadata.namespace } : {}),
    ...run.fieldRefs,
  };
  const env: Record<string, string> = {};
  for (const v of container.env ?? []) {
    if (v.valueFrom === undefined) {
      env[v.name] = v.value ?? '';
      continue;
    }
    const path = v.valueFrom.fieldRef?.fieldPath;
    const others = Object.keys(v.valueFrom).filter((k) => k !== 'fieldRef');
    if (path === undefined || others.length > 0) {
      throw new Error(`env ${v.name}: only fieldRef values can be resolved locally, got ${Object.keys(v.valueFrom).join(', ')}`);
    }
    const value = fieldRefs[path];
    if (value === undefined) throw new Error(`env ${v.name}: no local value for fieldRef ${path} (give it in fieldRefs)`);
    env[v.name] = value;
  }
  return env;
}

/**
 * The local process for the Deployment's container. Throws when an override names a flag the
 * Deployment does not pass and that is not in {@link LOCAL_ONLY_FLAGS}, when an env value
 * cannot be resolved, or when the container does not start a Node script.
 */
export function localInvocation(deployment: DeploymentLike, image: ImageConfig, run: LocalRun): Invocation {
  const container = pickContainer(deployment, run.container);
  // Kubernetes' rules: `command` replaces the ENTRYPOINT (and drops CMD), `args` replaces CMD.
  const entry = container.command ?? image.entrypoint;
  const cmd = container.args ?? (container.command ? [] : image.cmd);
  const [binary, ...rest] = entry;
  if (binary === undefined || !NODE_BINARIES.has(binary)) {
    throw new Error(`container ${container.name} starts ${JSON.stringify(entry)}, not a Node script; cannot run it locally`);
  }
  const scriptAt = rest.findIndex((a) => !a.startsWith('-'));
  const imageScriptPath = rest[scriptAt];
  if (imageScriptPath === undefined) throw new Error(`container ${container.name} starts node without a script: ${JSON.stringify(entry)}`);
  const nodeArgs = rest.slice(0, scriptAt);
  const imageScript = posix.relative(image.workdir, posix.resolve(image.workdir, imageScriptPath));
  if (imageScript.startsWith('..') || isAbsolute(imageScript)) {
    throw new Error(`container ${container.name}: script ${imageScriptPath} is outside the image's WORKDIR ${image.workdir}`);
  }

  const flags = parseFlags([...rest.slice(scriptAt + 1), ...cmd]);
  for (const [name, value] of Object.entries(run.flags ?? {})) {
    if (name.startsWith('-')) throw new Error(`override "${name}": give flag names without dashes`);
    const passed = flags.filter((f) => f.name === name);
    if (passed.length > 0) {
      for (const f of passed) f.value = value;
    } else if (name in LOCAL_ONLY_FLAGS) {
      flags.push({ name, value });
    } else {
      throw new Error(
        `override --${name}: the Deployment does not pass it and it is not a local-only flag (${Object.keys(LOCAL_ONLY_FLAGS)
          .map((f) => `--${f}`)
          .join(', ')})`,
      );
    }
  }

  return {
    file: run.nodeBinary,
    nodeArgs,
    script: join(run.imageDir, ...imageScript.split('/')),
    imageScript,
    args: flags.map((f) => (f.value === undefined ? `--${f.name}` : `--${f.name}=${f.value}`)),
    env: { ...image.env, ...resolveEnv(deployment, container, run) },
  };
}
