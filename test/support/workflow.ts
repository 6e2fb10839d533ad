/**
 * Runs chosen `run:` steps of a GitHub Actions workflow the way the Actions runner does, so a test
 * executes the workflow's own scripts rather than a copy of them: the runner's shell invocation
 * (`bash -e {0}`, or `bash --noprofile --norc -eo pipefail {0}` for `shell: bash`), env merged
 * from workflow, job and step, and the GITHUB_OUTPUT and GITHUB_ENV files read back between
 * steps. It supports only what such steps need; anything else (an `if:`, an action, an
 * expression other than `steps.<id>.outputs.<name>` or `env.<NAME>`) throws instead of running
 * something the workflow would not.
 */
import { execFile } from 'node:child_process';
import { mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join, resolve } from 'node:path';
import { parse } from 'yaml';

/** Environment variables as a workflow declares them. */
export type WorkflowEnv = Readonly<Record<string, string | number | boolean>>;

/** `defaults:` of a workflow or job. */
export interface WorkflowDefaults {
  /** Defaults of `run:` steps. */
  readonly run?: { readonly shell?: string; readonly 'working-directory'?: string };
}

/** One step of a job, as far as this runner reads it. */
export interface WorkflowStep {
  /** The step's id, which `steps.<id>.outputs` refers to. */
  readonly id?: string;
  /** The step's display name. */
  readonly name?: string;
  /** The script of a `run:` step. */
  readonly run?: string;
  /** The action of a `uses:` step. */
  readonly uses?: string;
  /** The step's own environment. */
  readonly env?: WorkflowEnv;
  /** The shell the script runs in. */
  readonly shell?: string;
  /** Where the script runs, relative to the workspace. */
  readonly 'working-directory'?: string;
}

/** One job of a workflow. */
export interface WorkflowJob {
  /** The job's environment. */
  readonly env?: WorkflowEnv;
  /** The job's `run:` defaults. */
  readonly defaults?: WorkflowDefaults;
  /** The steps, in order. */
  readonly steps: readonly WorkflowStep[];
}

/** A workflow file, as far as this runner reads it. */
export interface Workflow {
  /** The workflow's environment. */
  readonly env?: WorkflowEnv;
  /** The workflow's `run:` defaults. */
  readonly defaults?: WorkflowDefaults;
  /** The jobs by id. */
  readonly jobs: Readonly<Record<string, WorkflowJob>>;
}

/** What one step did. */
export interface StepResult {
  /** The id or name the step was asked for by. */
  readonly key: string;
  /** The script's exit code. */
  readonly code: number;
  /** The script's standard output. */
  readonly stdout: string;
  /** The script's standard error. */
  readonly stderr: string;
  /** What the step wrote to GITHUB_OUTPUT. */
  readonly outputs: Readonly<Record<string, string>>;
}

/** Options of {@link runSteps}. */
export interface RunStepsOptions {
  /** The parsed workflow. */
  readonly workflow: Workflow;
  /** The id of the job the steps belong to. */
  readonly job: string;
  /** Ids (or names) of the steps to run, in the job's order. */
  readonly steps: readonly string[];
  /** The workspace: a checkout of the repository the workflow belongs to. */
  readonly workspace: string;
  /** The environment the runner itself has (PATH and the like); GITHUB_* variables are added. */
  readonly env: NodeJS.ProcessEnv;
}

// Step keys the runner honours as GitHub does; any other key would change what runs.
const SUPPORTED_STEP_KEYS = new Set(['id', 'name', 'run', 'env', 'shell', 'working-directory']);

/** Reads a workflow file. */
export function readWorkflow(file: string): Workflow {
  const wf = parse(readFileSync(file, 'utf8')) as Partial<Workflow> | null;
  if (!wf?.jobs) throw new Error(`${file} is no workflow: it has no jobs`);
  return wf as Workflow;
}

/** The job `id` of a workflow. */
export function findJob(workflow: Workflow, id: string): WorkflowJob {
  const job = workflow.jobs[id];
  if (!job) throw new Error(`the workflow has no job ${id} (jobs: ${Object.keys(workflow.jobs).join(', ')})`);
  return job;
}

/** The step of `job` whose id, or else whose name, is `key`. */
export function findStep(job: WorkflowJob, key: string): WorkflowStep {
  const step = job.steps.find((s) => s.id === key) ?? job.steps.find((s) => s.name === key);
  if (!step) throw new Error(`the job has no step with id or name ${JSON.stringify(key)}`);
  return step;
}

/**
 * Parses a file written through GITHUB_OUTPUT or GITHUB_ENV: `name=value` lines and
 * `name<<DELIMITER` blocks of several lines.
 */
export function parseFileCommands(text: string): Record<string, string> {
  const out: Record<string, string> = {};
  const lines = text.split('\n');
  for (let i = 0; i < lines.length; i++) {
    const line = lines[i] ?? '';
    if (line === '') continue;
    const block = /^([^=<]+)<<(.+)$/.exec(line);
    if (block?.[1] && block[2]) {
      const end = lines.indexOf(block[2], i + 1);
      if (end < 0) throw new Error(`file command ${block[1]}: no closing ${block[2]}`);
      out[block[1]] = lines.slice(i + 1, end).join('\n');
      i = end;
      continue;
    }
    const eq = line.indexOf('=');
    if (eq <= 0) throw new Error(`file command line is neither name=value nor name<<DELIMITER: ${line}`);
    out[line.slice(0, eq)] = line.slice(eq + 1);
  }
  return out;
}

function shellCommand(shell: string | undefined, script: string): [string, string[]] {
  // https://docs.github.com/en/actions/reference/workflows-and-actions/workflow-syntax#jobsjob_idstepsshell
  if (shell === undefined) return ['bash', ['-e', script]];
  if (shell === 'bash') return ['bash', ['--noprofile', '--norc', '-eo', 'pipefail', script]];
  throw new Error(`shell ${shell} is not supported here`);
}

function substitute(
  text: string,
  where: string,
  ctx: { outputs: Map<string, Readonly<Record<string, string>>>; env: Record<string, string> },
): string {
  return text.replace(/\$\{\{\s*(.*?)\s*\}\}/g, (_, expr: string) => {
    const output = /^steps\.([\w-]+)\.outputs\.([\w-]+)$/.exec(expr);
    if (output?.[1] && output[2]) {
      const outputs = ctx.outputs.get(output[1]);
      if (!outputs) throw new Error(`${where}: \${{ ${expr} }} names step ${output[1]}, which has not run`);
      return outputs[output[2]] ?? '';
    }
    const env = /^env\.(\w+)$/.exec(expr);
    if (env?.[1]) return ctx.env[env[1]] ?? '';
    throw new Error(`${where}: the expression \${{ ${expr} }} is not supported here`);
  });
}

function strings(env: WorkflowEnv | undefined): Record<string, string> {
  return Object.fromEntries(Object.entries(env ?? {}).map(([k, v]) => [k, String(v)]));
}

// Workflow and job env may only use contexts this runner does not have (github, vars, secrets).
function literals(env: WorkflowEnv | undefined, where: string): Record<string, string> {
  const out = strings(env);
  for (const [k, v] of Object.entries(out)) {
    if (v.includes('${{')) throw new Error(`${where} env ${k}: expressions are not supported here (${v})`);
  }
  return out;
}

/**
 * Runs the named steps of a job one after another, as the Actions runner does, and stops after
 * the first that fails. The steps must appear in this order in the job; the steps between them
 * do not run.
 */
export async function runSteps(opts: RunStepsOptions): Promise<StepResult[]> {
  const job = findJob(opts.workflow, opts.job);
  const chosen = opts.steps.map((key) => ({ key, step: findStep(job, key) }));
  const positions = chosen.map((c) => job.steps.indexOf(c.step));
  if (positions.some((p, i) => i > 0 && p <= (positions[i - 1] ?? -1))) {
    throw new Error(`steps ${opts.steps.join(', ')} are not in the job's order`);
  }
  const temp = mkdtempSync(join(tmpdir(), 'bucketoperator-runner-'));
  const results: StepResult[] = [];
  const outputs = new Map<string, Readonly<Record<string, string>>>();
  const fromFiles: Record<string, string> = {};
  try {
    for (const [index, { key, step }] of chosen.entries()) {
      const unsupported = Object.keys(step).filter((k) => !SUPPORTED_STEP_KEYS.has(k));
      if (step.run === undefined || unsupported.length > 0) {
        throw new Error(
          `step ${key}: only run: steps with ${[...SUPPORTED_STEP_KEYS].join(', ')} are supported (it has ${Object.keys(step).join(', ')})`,
        );
      }
      const outputFile = join(temp, `output-${index}`);
      const envFile = join(temp, `env-${index}`);
      writeFileSync(outputFile, '');
      writeFileSync(envFile, '');
      const inherited = { ...literals(opts.workflow.env, 'workflow'), ...literals(job.env, `job ${opts.job}`), ...fromFiles };
      const ctx = { outputs, env: inherited };
      const env: Record<string, string> = { ...inherited };
      for (const [k, v] of Object.entries(strings(step.env))) env[k] = substitute(v, `step ${key} env ${k}`, ctx);
      const script = join(temp, `step-${index}.sh`);
      writeFileSync(script, substitute(step.run, `step ${key} run`, ctx));
      const shell = step.shell ?? job.defaults?.run?.shell ?? opts.workflow.defaults?.run?.shell;
      const dir = step['working-directory'] ?? job.defaults?.run?.['working-directory'] ?? opts.workflow.defaults?.run?.['working-directory'];
      const [cmd, args] = shellCommand(shell, script);
      const res = await new Promise<{ code: number; stdout: string; stderr: string }>((done) => {
        execFile(
          cmd,
          args,
          {
            cwd: dir === undefined ? opts.workspace : resolve(opts.workspace, dir),
            env: {
              ...opts.env,
              CI: 'true',
              GITHUB_ACTIONS: 'true',
              GITHUB_WORKSPACE: opts.workspace,
              GITHUB_OUTPUT: outputFile,
              GITHUB_ENV: envFile,
              GITHUB_STEP_SUMMARY: join(temp, `summary-${index}`),
              RUNNER_TEMP: temp,
              ...env,
            },
            maxBuffer: 64 * 1024 * 1024,
          },
          (err, stdout, stderr) => {
            const code = err ? (typeof err.code === 'number' ? err.code : 1) : 0;
            done({ code, stdout, stderr });
          },
        );
      });
      const stepOutputs = parseFileCommands(readFileSync(outputFile, 'utf8'));
      if (step.id) outputs.set(step.id, stepOutputs);
      Object.assign(fromFiles, parseFileCommands(readFileSync(envFile, 'utf8')));
      results.push({ key, ...res, outputs: stepOutputs });
      if (res.code !== 0) break;
    }
  } finally {
    rmSync(temp, { recursive: true, force: true });
  }
  return results;
}
