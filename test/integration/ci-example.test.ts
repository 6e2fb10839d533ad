/**
 * examples/ci as a user's repository runs it: a copy outside this repository, the packed
 * package installed into it, committed to git, and the render job's image, synth and check steps
 * run from the workflow file itself (test/support/workflow.ts), so the scripts tested are the
 * scripts shipped. The check passes on the committed dist/ and fails, naming the files, once
 * main.ts or the image the workflow builds changes.
 *
 * After a change to infra/ that alters what the example renders, regenerate its dist/ with
 * BUCKETOPERATOR_UPDATE_EXAMPLES=1 on this file: the dist/ the steps render is copied back into
 * examples/ci/dist/.
 */
import { expect } from 'chai';
import { cpSync, mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { basename, delimiter, join } from 'node:path';
import { parseAllDocuments } from 'yaml';
import { REPO } from '../support/image';
import { npmInstall, packedTarball, sh } from '../support/packed';
import { readWorkflow, runSteps, type StepResult } from '../support/workflow';

const EXAMPLE = join(REPO, 'examples', 'ci');
const WORKFLOW = join('.github', 'workflows', 'deploy.yaml');
const JOB = 'render';

type Deployment = { kind: string; spec: { template: { spec: { containers: { image: string }[] } } } };

/**
 * The environment a fresh runner would have: none of the variables npm gives the mocha run's
 * script (lower-case npm_*; an NPM_CONFIG_* set on purpose stays) and no node_modules/.bin of
 * this repository on PATH, so a tool the example forgot to install fails instead of being
 * borrowed from here.
 */
function runnerEnv(): NodeJS.ProcessEnv {
  const env: NodeJS.ProcessEnv = {};
  for (const [k, v] of Object.entries(process.env)) {
    if (!k.startsWith('npm_') && k !== 'INIT_CWD') env[k] = v;
  }
  env['PATH'] = (process.env['PATH'] ?? '')
    .split(delimiter)
    .filter((p) => !p.endsWith('/node_modules/.bin'))
    .join(delimiter);
  return env;
}

function edit(file: string, from: string, to: string): void {
  const text = readFileSync(file, 'utf8');
  if (!text.includes(from)) throw new Error(`${file} no longer contains ${JSON.stringify(from)}: update this test's edit`);
  writeFileSync(file, text.replace(from, to));
}

function summary(results: readonly StepResult[]): string {
  return results.map((r) => `--- ${r.key}: exit ${r.code}\n${r.stdout}${r.stderr}`).join('\n');
}

describe('examples/ci: the workflow renders dist/ and checks the committed one', function () {
  // npm pack (with the lib build), an install from the warm npm cache and three cdk8s synths:
  // about a minute on 2 shared cores; the limit leaves room for a slow machine, not for a hang.
  this.timeout(300_000);
  const env = runnerEnv();
  let tmp = '';
  let repo = '';
  let version = '';

  const git = (...args: string[]) => sh('git', ['-c', 'user.name=ci-example', '-c', 'user.email=ci-example@example.com', ...args], repo, env);
  const render = () => runSteps({ workflow: readWorkflow(join(repo, WORKFLOW)), job: JOB, steps: ['image', 'synth', 'check'], workspace: repo, env });

  before(async () => {
    const started = Date.now();
    tmp = mkdtempSync(join(tmpdir(), 'bucketoperator-ci-example-'));
    repo = join(tmp, 'repo');
    cpSync(EXAMPLE, repo, { recursive: true, filter: (src) => basename(src) !== 'node_modules' });

    const tarball = await packedTarball();
    version = (JSON.parse(readFileSync(join(REPO, 'package.json'), 'utf8')) as { version: string }).version;
    const pkgFile = join(repo, 'package.json');
    const pkg = JSON.parse(readFileSync(pkgFile, 'utf8')) as { dependencies: Record<string, string> };
    // The example pins the version this checkout packs: the image tag is that version.
    expect(pkg.dependencies['bucketoperator'], 'examples/ci/package.json pins bucketoperator').to.equal(version);
    pkg.dependencies['bucketoperator'] = `file:${tarball}`;
    writeFileSync(pkgFile, JSON.stringify(pkg, null, 2));
    await npmInstall(repo, env);

    if (process.env['BUCKETOPERATOR_UPDATE_EXAMPLES'] === '1') {
      const rendered = await runSteps({ workflow: readWorkflow(join(repo, WORKFLOW)), job: JOB, steps: ['image', 'synth'], workspace: repo, env });
      if (rendered.some((r) => r.code !== 0)) throw new Error(`cannot render the example:\n${summary(rendered)}`);
      rmSync(join(EXAMPLE, 'dist'), { recursive: true, force: true });
      cpSync(join(repo, 'dist'), join(EXAMPLE, 'dist'), { recursive: true });
      console.log('      (wrote examples/ci/dist/)');
    }

    await git('init', '-q', '-b', 'main');
    await git('add', '-A');
    await git('commit', '-q', '-m', 'the example as committed');
    console.log(`      (pack, install and commit took ${((Date.now() - started) / 1000).toFixed(1)} s)`);
  });
  beforeEach(async () => {
    await git('checkout', '-q', '--', '.');
    // Ignored files stay: node_modules is the installed package.
    await git('clean', '-qfd');
  });
  after(() => {
    if (tmp) rmSync(tmp, { recursive: true, force: true });
  });

  it('passes on the committed dist/, whose Deployment runs the image the workflow pushes', async () => {
    const results = await render();
    expect(
      results.map((r) => [r.key, r.code]),
      summary(results),
    ).to.deep.equal([
      ['image', 0],
      ['synth', 0],
      ['check', 0],
    ]);
    const repository = String(readWorkflow(join(repo, WORKFLOW)).env?.['IMAGE_REPOSITORY']);
    const image = `${repository}:${version}`;
    expect(results[0]?.outputs).to.deep.equal({ version, image });
    expect(results[2]?.stdout).to.include(`dist/ is what main.ts renders with IMAGE=${image}`);
    const deployments = parseAllDocuments(readFileSync(join(repo, 'dist', 'operator.k8s.yaml'), 'utf8'))
      .map((d) => d.toJS() as Deployment)
      .filter((o) => o.kind === 'Deployment');
    expect(deployments.flatMap((d) => d.spec.template.spec.containers.map((c) => c.image))).to.deep.equal([image]);
    expect(await git('status', '--porcelain')).to.equal('');
  });

  const cases: Record<string, { change: (repo: string) => void; stale: string[]; image: string }> = {
    'main.ts grows a bucket and adds a chart': {
      change: (dir) => {
        const main = join(dir, 'main.ts');
        edit(main, '{ logs: 50, backups: 200 }', '{ logs: 80, backups: 200 }');
        edit(main, '\napp.synth();', "\nnew Chart(app, 'extra');\napp.synth();");
      },
      stale: [' M dist/buckets.k8s.yaml', '?? dist/extra.k8s.yaml'],
      image: 'ghcr.io/example-org/bucketoperator:',
    },
    'the workflow pushes the image to another repository': {
      change: (dir) =>
        edit(
          join(dir, WORKFLOW),
          'IMAGE_REPOSITORY: ghcr.io/example-org/bucketoperator',
          'IMAGE_REPOSITORY: registry.example.com/platform/bucketoperator',
        ),
      stale: [' M dist/operator.k8s.yaml'],
      image: 'registry.example.com/platform/bucketoperator:',
    },
  };
  for (const [name, tc] of Object.entries(cases)) {
    it(`fails once ${name}, naming the stale files and the command that renders them`, async () => {
      tc.change(repo);
      const results = await render();
      expect(
        results.map((r) => [r.key, r.code]),
        summary(results),
      ).to.deep.equal([
        ['image', 0],
        ['synth', 0],
        ['check', 1],
      ]);
      const out = results[2]?.stdout ?? '';
      expect(out.split('\n').filter((l) => /^.. dist\//.test(l))).to.deep.equal(tc.stale);
      expect(out).to.include(
        `::error title=dist/ is stale::dist/ is not what main.ts renders. Run: IMAGE=${tc.image}${version} npm run synth, then commit dist/.`,
      );
    });
  }
});
