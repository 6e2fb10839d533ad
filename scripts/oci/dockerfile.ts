/**
 * A Dockerfile's runtime stage as a recipe the OCI image builder applies: what the final
 * stage's instructions make of the base image's config (WORKDIR, ENV, USER, EXPOSE, ENTRYPOINT,
 * CMD, LABEL) and which paths its COPY instructions fill. The image built without Docker then
 * follows the same file as `docker build`; an instruction this module does not apply is an error
 * naming it, never skipped, so the Dockerfile cannot say something the built image ignores.
 */
import { posix } from 'node:path';
import type { ImageConfig } from './archive';

/** One instruction, its keyword upper-cased and its arguments as written (continuations joined). */
export interface Instruction {
  readonly keyword: string;
  readonly args: string;
}

/** One build stage. */
export interface Stage {
  /** The `AS` name; the stage's index when unnamed. */
  readonly name: string;
  readonly base: string;
  readonly platform?: string;
  readonly instructions: readonly Instruction[];
}

/** One source of a COPY, with where it lands in the image. */
export interface CopyStep {
  /** The stage copied from; undefined for the build context. */
  readonly from?: string;
  /** As written in the Dockerfile. */
  readonly source: string;
  /** Absolute path in the image. */
  readonly target: string;
  readonly uid: number;
  readonly gid: number;
}

/** A directory WORKDIR creates, owned by the USER in force (as BuildKit creates it). */
export interface WorkdirStep {
  readonly path: string;
  readonly uid: number;
  readonly gid: number;
}

/** What the runtime stage makes. */
export interface RuntimeRecipe {
  /** The FROM image. */
  readonly base: string;
  /** The base's config with the stage's instructions applied. */
  readonly config: ImageConfig;
  readonly workdirs: readonly WorkdirStep[];
  readonly copies: readonly CopyStep[];
}

/** The runtime-stage instructions {@link runtimeRecipe} applies; any other fails the build. */
export const APPLIED_INSTRUCTIONS = ['WORKDIR', 'ENV', 'COPY', 'USER', 'EXPOSE', 'ENTRYPOINT', 'CMD', 'LABEL'] as const;

/** Splits a Dockerfile into stages (any instruction; which ones apply is the recipe's business). */
export function parseDockerfile(text: string): Stage[] {
  const stages: { name: string; base: string; platform?: string; instructions: Instruction[] }[] = [];
  let pending = '';
  for (const raw of text.split('\n')) {
    const line = raw.trim();
    if (line.startsWith('#')) continue;
    if (line.endsWith('\\')) {
      pending += `${line.slice(0, -1)} `;
      continue;
    }
    const full = (pending + line).trim();
    pending = '';
    if (full === '') continue;
    const m = /^(\S+)\s*(.*)$/.exec(full);
    const keyword = (m?.[1] ?? '').toUpperCase();
    const args = (m?.[2] ?? '').trim();
    if (keyword === 'FROM') {
      const from = /^(?:--platform=(\S+)\s+)?(\S+)(?:\s+AS\s+(\S+))?$/i.exec(args);
      if (!from?.[2]) throw new Error(`Dockerfile: cannot read "FROM ${args}"`);
      stages.push({ name: from[3] ?? String(stages.length), base: from[2], ...(from[1] ? { platform: from[1] } : {}), instructions: [] });
      continue;
    }
    const stage = stages.at(-1);
    if (!stage) throw new Error(`Dockerfile: "${keyword}" before the first FROM`);
    stage.instructions.push({ keyword, args });
  }
  return stages;
}

function execForm(keyword: string, args: string): string[] {
  let parsed: unknown;
  try {
    parsed = JSON.parse(args);
  } catch {
    throw new Error(`Dockerfile: ${keyword} must use the exec (JSON array) form (the image has no shell), got ${args}`);
  }
  if (!Array.isArray(parsed) || !parsed.every((p): p is string => typeof p === 'string')) {
    throw new Error(`Dockerfile: ${keyword} must be a JSON array of strings, got ${args}`);
  }
  return parsed;
}

/** `KEY=value` pairs (a value may be double-quoted, without escapes), or the legacy `KEY value`. */
function pairs(keyword: string, args: string): [string, string][] {
  const legacy = /^([A-Za-z_][A-Za-z0-9_.-]*)\s+([^=]*)$/.exec(args);
  if (legacy?.[1] && legacy[2] !== undefined && !args.includes('=')) return [[legacy[1], legacy[2].trim()]];
  const out: [string, string][] = [];
  const re = /([A-Za-z_][A-Za-z0-9_.-]*)=(?:"([^"\\$]*)"|([^\s"'\\$]*))(?:\s+|$)/gy;
  let at = 0;
  for (let m = re.exec(args); m; m = re.exec(args)) {
    out.push([m[1] ?? '', m[2] ?? m[3] ?? '']);
    at = re.lastIndex;
  }
  if (at !== args.length || out.length === 0)
    throw new Error(`Dockerfile: ${keyword} must be KEY=value pairs without escapes or variables, got "${args}"`);
  return out;
}

/** The ids a USER or --chown names: numeric `uid[:gid]`, or root / nonroot (distroless' two users). */
export function userIds(spec: string): { uid: number; gid: number } {
  const named: Record<string, number> = { root: 0, nonroot: 65532 };
  const [user = '', group] = spec.split(':');
  const id = (s: string) => {
    if (/^\d+$/.test(s)) return Number(s);
    const known = named[s];
    if (known === undefined) throw new Error(`Dockerfile: user or group "${s}" is neither numeric nor root/nonroot`);
    return known;
  };
  const uid = id(user);
  return { uid, gid: group === undefined ? uid : id(group) };
}

function resolveIn(dir: string, path: string): string {
  return posix.resolve(dir, path);
}

/**
 * Applies the final stage of `stages` to `baseConfig` (the config of the image it starts FROM),
 * with Docker's semantics: ENV replaces a variable of the same name, a relative WORKDIR or COPY
 * destination is resolved against the WORKDIR in force, ENTRYPOINT resets an inherited CMD, a
 * COPY destination ending in `/` (or with several sources) is a directory. Throws on any
 * instruction not in {@link APPLIED_INSTRUCTIONS} and on forms it cannot apply exactly (shell
 * forms, COPY flags other than --from and --chown).
 */
export function runtimeRecipe(stages: readonly Stage[], baseConfig: ImageConfig): RuntimeRecipe {
  const last = stages.at(-1);
  if (!last) throw new Error('Dockerfile: no stages');
  const stageNames = new Set(stages.slice(0, -1).map((s) => s.name));
  const config: ImageConfig = {
    ...baseConfig,
    ...(baseConfig.Env ? { Env: [...baseConfig.Env] } : {}),
    ...(baseConfig.ExposedPorts ? { ExposedPorts: { ...baseConfig.ExposedPorts } } : {}),
    ...(baseConfig.Labels ? { Labels: { ...baseConfig.Labels } } : {}),
  };
  let workdir = config.WorkingDir ?? '/';
  const workdirs: WorkdirStep[] = [];
  const copies: CopyStep[] = [];
  for (const { keyword, args } of last.instructions) {
    switch (keyword) {
      case 'WORKDIR': {
        workdir = resolveIn(workdir, args);
        config.WorkingDir = workdir;
        workdirs.push({ path: workdir, ...userIds(config.User ?? '0') });
        break;
      }
      case 'ENV': {
        const env = config.Env ?? [];
        for (const [key, value] of pairs(keyword, args)) {
          const at = env.findIndex((e) => e.startsWith(`${key}=`));
          if (at >= 0) env[at] = `${key}=${value}`;
          else env.push(`${key}=${value}`);
        }
        config.Env = env;
        break;
      }
      case 'LABEL': {
        config.Labels = { ...config.Labels, ...Object.fromEntries(pairs(keyword, args)) };
        break;
      }
      case 'USER': {
        userIds(args);
        config.User = args;
        break;
      }
      case 'EXPOSE': {
        const ports = { ...config.ExposedPorts };
        for (const port of args.split(/\s+/)) {
          const m = /^(\d+)(?:\/(tcp|udp|sctp))?$/.exec(port);
          if (!m) throw new Error(`Dockerfile: EXPOSE ${port} is not PORT[/PROTOCOL]`);
          ports[`${m[1]}/${m[2] ?? 'tcp'}`] = {};
        }
        config.ExposedPorts = ports;
        break;
      }
      case 'ENTRYPOINT': {
        config.Entrypoint = execForm(keyword, args);
        delete config.Cmd;
        break;
      }
      case 'CMD': {
        config.Cmd = execForm(keyword, args);
        break;
      }
      case 'COPY': {
        const words = args.split(/\s+/);
        let from: string | undefined;
        let owner = { uid: 0, gid: 0 };
        while (words[0]?.startsWith('--')) {
          const flag = words.shift() ?? '';
          const m = /^--(from|chown)=(\S+)$/.exec(flag);
          if (!m?.[2]) throw new Error(`Dockerfile: COPY ${flag} is not applied by the image builder (only --from and --chown are)`);
          if (m[1] === 'from') {
            if (!stageNames.has(m[2])) throw new Error(`Dockerfile: COPY --from=${m[2]} names no earlier stage`);
            from = m[2];
          } else owner = userIds(m[2]);
        }
        const dest = words.pop();
        if (!dest || words.length === 0 || words.some((w) => /[*?[]/.test(w))) throw new Error(`Dockerfile: cannot apply "COPY ${args}" (no globs)`);
        const intoDir = dest.endsWith('/') || words.length > 1;
        const base = resolveIn(workdir, dest);
        for (const source of words) {
          const target = intoDir ? posix.join(base, posix.basename(source)) : base;
          copies.push({ ...(from === undefined ? {} : { from }), source, target, ...owner });
        }
        break;
      }
      default:
        throw new Error(
          `Dockerfile: the runtime stage's ${keyword} is not applied by the image builder (scripts/oci/dockerfile.ts applies ${APPLIED_INSTRUCTIONS.join(', ')}); teach it ${keyword} before using it`,
        );
    }
  }
  return { base: last.base, config, workdirs, copies };
}
