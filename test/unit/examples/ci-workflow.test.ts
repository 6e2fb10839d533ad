/**
 * examples/ci's workflow passes actionlint, with shellcheck on every `run:` script, twice: as it
 * stands, and with each SHA-pinned action read as the version its comment names, since actionlint
 * checks the inputs of an action only at a version it knows. Control cases (the same workflow with
 * one defect) prove the check can fail. test/integration/ci-example.test.ts runs its scripts.
 */
import { expect } from 'chai';
import { spawnSync } from 'node:child_process';
import { mkdirSync, mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { parse } from 'yaml';
import { REPO } from '../../support/image';
import { lockedVersion } from '../../support/packed';
import { actionlint, shellcheck } from '../../support/test-tools';

const EXAMPLE = join(REPO, 'examples', 'ci');
const WORKFLOW_PATH = join('.github', 'workflows', 'deploy.yaml');
const WORKFLOW = readFileSync(join(EXAMPLE, WORKFLOW_PATH), 'utf8');

interface Finding {
  readonly message: string;
  readonly filepath: string;
  readonly line: number;
  readonly column: number;
  readonly kind: string;
}

type Job = { if?: string; permissions?: Record<string, string> };

/** Runs actionlint on a workflow text; its findings. */
function lint(text: string): Finding[] {
  const dir = mkdtempSync(join(tmpdir(), 'bucketoperator-actionlint-'));
  try {
    mkdirSync(join(dir, '.github', 'workflows'), { recursive: true });
    writeFileSync(join(dir, WORKFLOW_PATH), text);
    // pyflakes off: the workflow has no Python, and a pyflakes on PATH must not change the outcome.
    const res = spawnSync(actionlint(), ['-shellcheck', shellcheck(), '-pyflakes', '', '-no-color', '-format', '{{json .}}', WORKFLOW_PATH], {
      cwd: dir,
      encoding: 'utf8',
    });
    // Exit 1 means findings; anything else but 0 means actionlint itself failed.
    if (res.status !== 0 && res.status !== 1) throw new Error(`actionlint exited ${res.status}: ${res.stderr}`);
    const findings = (JSON.parse(res.stdout) as Finding[] | null) ?? [];
    expect(res.status, 'exit code against findings').to.equal(findings.length > 0 ? 1 : 0);
    return findings;
  } finally {
    rmSync(dir, { recursive: true, force: true });
  }
}

const show = (findings: readonly Finding[]) => findings.map((f) => `${f.filepath}:${f.line}:${f.column}: ${f.message} [${f.kind}]`).join('\n');

const PINNED = /^(\s*(?:-\s+)?uses:\s+[\w.-]+\/[\w./-]+)@[0-9a-f]{40} # (v\d+)\.\d+\.\d+$/;

/** The workflow with every pinned action read as the major version its comment names. */
function asTagged(text: string): string {
  return text
    .split('\n')
    .map((line) => line.replace(PINNED, '$1@$2'))
    .join('\n');
}

function edit(text: string, from: string, to: string): string {
  if (!text.includes(from)) throw new Error(`the workflow no longer contains ${JSON.stringify(from)}: update this control case`);
  return text.replace(from, to);
}

describe('examples/ci workflow', () => {
  it('has no actionlint findings, shellcheck included', () => {
    expect(show(lint(WORKFLOW))).to.equal('');
  });

  it('pins every action by a full commit SHA, with its version in a comment', () => {
    const uses = WORKFLOW.split('\n').filter((l) => /^\s*(-\s+)?uses:/.test(l));
    expect(uses).to.not.deep.equal([]);
    expect(uses.filter((l) => !PINNED.test(l))).to.deep.equal([]);
  });

  it('has no actionlint findings with each action read as its tagged version, so its inputs are checked', () => {
    const tagged = asTagged(WORKFLOW);
    expect(tagged).to.not.match(/@[0-9a-f]{40}/);
    expect(show(lint(tagged))).to.equal('');
  });

  it('checks every pull request, and builds, pushes and deploys only from main', () => {
    const wf = parse(WORKFLOW) as { on: Record<string, { branches?: string[] } | null>; permissions: unknown; jobs: Record<string, Job> };
    expect(wf.on['pull_request']?.branches).to.deep.equal(['main']);
    expect(wf.on['push']?.branches).to.deep.equal(['main']);
    expect(wf.permissions, 'no permission unless a job asks').to.deep.equal({});
    const { render, ...onMain } = wf.jobs;
    expect(render?.if, 'the render job runs on every event').to.equal(undefined);
    expect(Object.keys(onMain).sort()).to.deep.equal(['apply', 'gitops', 'image']);
    for (const [id, job] of Object.entries(onMain)) {
      expect(job.if, id).to.include("github.event_name != 'pull_request' && github.ref == 'refs/heads/main'");
    }
    expect(wf.jobs['image']?.permissions).to.deep.equal({ packages: 'write' });
    expect(wf.jobs['gitops']?.permissions).to.deep.equal({ contents: 'write' });
    expect(wf.jobs['apply']?.permissions).to.deep.equal({ contents: 'read' });
  });

  it('pins the versions of bucketoperator and of cdk8s this repository is built and tested with', () => {
    const pkg = JSON.parse(readFileSync(join(EXAMPLE, 'package.json'), 'utf8')) as {
      dependencies: Record<string, string>;
      devDependencies: Record<string, string>;
    };
    const own = JSON.parse(readFileSync(join(REPO, 'package.json'), 'utf8')) as { version: string };
    const { bucketoperator, ...rest } = { ...pkg.dependencies, ...pkg.devDependencies };
    expect(bucketoperator).to.equal(own.version);
    for (const [name, version] of Object.entries(rest)) expect(version, name).to.equal(lockedVersion(name));
  });

  // The shipped workflow with one defect each: actionlint must report it, under the kind named.
  const controls: Record<string, { broken: () => string; kind: string }> = {
    'an unquoted variable in a run: script (shellcheck)': {
      broken: () => edit(WORKFLOW, 'docker push "$IMAGE"', 'docker push $IMAGE'),
      kind: 'shellcheck',
    },
    'an output of a step that does not exist': {
      broken: () => edit(WORKFLOW, 'IMAGE: ${{ steps.image.outputs.image }}', 'IMAGE: ${{ steps.images.outputs.image }}'),
      kind: 'expression',
    },
    'a pull request title in a script': {
      broken: () => edit(WORKFLOW, 'run: npm run synth', 'run: echo "${{ github.event.pull_request.title }}"'),
      kind: 'expression',
    },
    'a job that needs one that does not exist': {
      broken: () => edit(WORKFLOW, 'needs: render', 'needs: rendr'),
      kind: 'job-needs',
    },
    'an input the tagged action does not have': {
      broken: () => asTagged(edit(WORKFLOW, 'persist-credentials: false', 'persist-credential: false')),
      kind: 'action',
    },
  };
  for (const [name, tc] of Object.entries(controls)) {
    it(`reports ${name}`, () => {
      const findings = lint(tc.broken());
      expect(
        findings.map((f) => f.kind),
        show(findings),
      ).to.include(tc.kind);
    });
  }
});
