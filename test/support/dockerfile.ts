/**
 * A small reader of the Dockerfile instructions operator/Dockerfile uses (FROM, WORKDIR, COPY,
 * RUN, ENV, USER, EXPOSE, ENTRYPOINT, CMD), so tests can hold the local image build to the
 * Dockerfile and start the operator the way the image's ENTRYPOINT does. Not a general parser:
 * an instruction or form it does not know is an error, never silently skipped.
 */

import { parseDockerfile as splitStages, type Instruction, type Stage } from '../../scripts/oci/dockerfile';

export type { Instruction, Stage };

/** A `COPY` instruction, split up. */
export interface Copy {
  /** The stage copied from; undefined for the build context. */
  readonly from?: string;
  readonly sources: readonly string[];
  readonly dest: string;
}

/** What a container started from the final stage runs with. */
export interface ImageConfig {
  readonly workdir: string;
  readonly env: Readonly<Record<string, string>>;
  readonly entrypoint: readonly string[];
  readonly cmd: readonly string[];
  readonly user?: string;
}

const KNOWN = new Set(['FROM', 'WORKDIR', 'COPY', 'RUN', 'ENV', 'USER', 'EXPOSE', 'ENTRYPOINT', 'CMD', 'ARG', 'LABEL']);

/** Splits a Dockerfile into stages (the OCI builder's reader), refusing an instruction this module does not know. */
export function parseDockerfile(text: string): Stage[] {
  const stages = splitStages(text);
  for (const { keyword } of stages.flatMap((st) => st.instructions)) {
    if (!KNOWN.has(keyword)) throw new Error(`Dockerfile: unsupported instruction "${keyword}"`);
  }
  return stages;
}

/** The named stage; throws when there is none. */
export function stage(stages: readonly Stage[], name: string): Stage {
  const found = stages.find((s) => s.name === name);
  if (!found) throw new Error(`Dockerfile: no stage named "${name}" (stages: ${stages.map((s) => s.name).join(', ')})`);
  return found;
}

/** The arguments of every instruction of `keyword` in a stage, in order. */
export function argsOf(s: Stage, keyword: string): string[] {
  return s.instructions.filter((i) => i.keyword === keyword).map((i) => i.args);
}

/** The COPY instructions of a stage (shell form only, with an optional --from). */
export function copies(s: Stage): Copy[] {
  return argsOf(s, 'COPY').map((args) => {
    const words = args.split(/\s+/);
    let from: string | undefined;
    while (words[0]?.startsWith('--')) {
      const flag = words.shift() ?? '';
      const m = /^--from=(\S+)$/.exec(flag);
      if (!m) throw new Error(`Dockerfile: unsupported COPY flag "${flag}"`);
      from = m[1];
    }
    const dest = words.pop();
    if (!dest || words.length === 0) throw new Error(`Dockerfile: cannot read "COPY ${args}"`);
    return { from, sources: words, dest };
  });
}

function execForm(keyword: string, args: string): string[] {
  let parsed: unknown;
  try {
    parsed = JSON.parse(args);
  } catch {
    throw new Error(`Dockerfile: ${keyword} must use the exec (JSON array) form, got ${args}`);
  }
  if (!Array.isArray(parsed) || !parsed.every((p): p is string => typeof p === 'string')) {
    throw new Error(`Dockerfile: ${keyword} must be a JSON array of strings, got ${args}`);
  }
  return parsed;
}

/** ENTRYPOINT, CMD, WORKDIR, ENV and USER of the final stage: what a container starts with. */
export function imageConfig(stages: readonly Stage[]): ImageConfig {
  const last = stages.at(-1);
  if (!last) throw new Error('Dockerfile: no stages');
  let workdir = '/';
  const env: Record<string, string> = {};
  let entrypoint: string[] = [];
  let cmd: string[] = [];
  let user: string | undefined;
  for (const { keyword, args } of last.instructions) {
    if (keyword === 'WORKDIR') workdir = args.startsWith('/') ? args : `${workdir.replace(/\/$/, '')}/${args}`;
    else if (keyword === 'ENV') {
      for (const pair of args.split(/\s+/)) {
        const eq = pair.indexOf('=');
        if (eq < 1 || /["']/.test(pair)) throw new Error(`Dockerfile: ENV must be unquoted KEY=value pairs, got "${args}"`);
        env[pair.slice(0, eq)] = pair.slice(eq + 1);
      }
    } else if (keyword === 'ENTRYPOINT') {
      entrypoint = execForm(keyword, args);
      // As in Docker: a later ENTRYPOINT resets an earlier CMD.
      cmd = [];
    } else if (keyword === 'CMD') cmd = execForm(keyword, args);
    else if (keyword === 'USER') user = args;
  }
  return { workdir, env, entrypoint, cmd, user };
}
