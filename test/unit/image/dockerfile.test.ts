/**
 * operator/Dockerfile and scripts/build-image.sh build the same thing: both follow the lists in
 * scripts/image.env, so a step changed in one and not the other fails here.
 */
import { expect } from 'chai';
import { readFileSync } from 'node:fs';
import { join } from 'node:path';
import ts from 'typescript';
import { argsOf, copies, imageConfig, parseDockerfile, stage, type Stage } from '../../support/dockerfile';
import { distDeployment } from '../../support/dist';
import { BUILD_SCRIPT, DOCKERFILE, imageList, readImageEnv, REPO } from '../../support/image';

const stages = parseDockerfile(readFileSync(DOCKERFILE, 'utf8'));
const vars = readImageEnv();
const script = readFileSync(BUILD_SCRIPT, 'utf8');
const words = (s: string) => s.split(/\s+/).filter(Boolean);
const contextSources = (s: Stage) =>
  copies(s)
    .filter((c) => c.from === undefined)
    .flatMap((c) => c.sources);
const workdir = (s: Stage) => argsOf(s, 'WORKDIR').at(-1) ?? '/';

describe('operator/Dockerfile follows scripts/image.env, as scripts/build-image.sh does', () => {
  const build = stage(stages, 'build');
  const runtime = stages.at(-1) as Stage;
  const { config } = ts.readConfigFile(join(REPO, 'tsconfig.build.json'), ts.sys.readFile) as { config: { compilerOptions: { outDir: string } } };
  const outDir = config.compilerOptions.outDir;

  it('the build script reads every list from image.env', () => {
    expect(script).to.include('source "$repo/scripts/image.env"');
    for (const key of ['IMAGE_BUILD_INPUTS', 'IMAGE_TSC_ARGS', 'IMAGE_BUNDLE_SCRIPT', 'IMAGE_RUNTIME_FILES']) {
      expect(script, key).to.include(`$${key}`);
    }
    expect(script).to.match(/tsc \$IMAGE_TSC_ARGS --outDir "\$work\/tsc"/);
    expect(script).to.include('tsx "$IMAGE_BUNDLE_SCRIPT" "$work/tsc" "$work/bundle"');
    // The image holds no node_modules, so neither may the directory the tests run.
    const commands = script.split('\n').filter((l) => !l.trim().startsWith('#'));
    expect(commands.filter((l) => /\bnpm (ci|install)\b/.test(l))).to.deep.equal([]);
  });

  it('the build stage copies exactly IMAGE_BUILD_INPUTS, compiles with IMAGE_TSC_ARGS, then bundles', () => {
    expect(contextSources(build).sort()).to.deep.equal(imageList(vars, 'IMAGE_BUILD_INPUTS').sort());
    const runs = argsOf(build, 'RUN');
    const tsc = runs.indexOf(`npx tsc ${vars['IMAGE_TSC_ARGS']}`);
    const bundle = runs.indexOf(`npx tsx ${vars['IMAGE_BUNDLE_SCRIPT']} ${outDir} bundle`);
    expect(tsc, 'tsc').to.be.at.least(0);
    expect(bundle, 'the bundle step, after tsc').to.be.greaterThan(tsc);
  });

  it('has no stage that installs production node_modules: the bundle inlines them', () => {
    expect(stages.map((s) => s.name)).to.deep.equal(['build', String(stages.length - 1)]);
    const installs = argsOf(build, 'RUN').filter((r) => words(r)[0] === 'npm');
    expect(installs).to.deep.equal(['npm ci --ignore-scripts --no-audit --no-fund']);
  });

  it('the runtime stage holds exactly IMAGE_RUNTIME_FILES, copied from the build stage', () => {
    const wanted: Record<string, string> = {
      'package.json': `build:${workdir(build)}/package.json`,
      operator: `build:${workdir(build)}/bundle/operator`,
    };
    const got: Record<string, string> = {};
    for (const c of copies(runtime)) {
      expect(c.from, `COPY ${c.sources.join(' ')} into the runtime stage`).to.be.a('string');
      expect(c.sources, `COPY --from=${c.from}`).to.have.length(1);
      got[c.dest.replace(/^\.\//, '')] = `${c.from}:${c.sources[0]}`;
    }
    expect(Object.keys(got).sort()).to.deep.equal(imageList(vars, 'IMAGE_RUNTIME_FILES').sort());
    expect(got).to.deep.equal(wanted);
  });

  it('starts operator/main.js as the non-root user the Deployment asserts', () => {
    const cfg = imageConfig(stages);
    expect(cfg.workdir).to.equal('/app');
    expect(cfg.entrypoint).to.deep.equal(['/nodejs/bin/node', 'operator/main.js']);
    // Which Node line and Debian: node-runtime.test.ts, beside the lockfile and engines.
    expect(runtime.base).to.match(/^gcr\.io\/distroless\/nodejs\d+-debian\d+:nonroot$/);
    const pod = distDeployment().spec.template.spec as { securityContext?: { runAsUser?: number; runAsGroup?: number } };
    expect(cfg.user).to.equal(`${pod.securityContext?.runAsUser}:${pod.securityContext?.runAsGroup}`);
  });

  it('.dockerignore sends the build context nothing but IMAGE_BUILD_INPUTS', () => {
    const lines = readFileSync(join(REPO, '.dockerignore'), 'utf8')
      .split('\n')
      .map((l) => l.trim())
      .filter((l) => l && !l.startsWith('#'));
    expect(lines[0]).to.equal('*');
    expect(lines.slice(1).sort()).to.deep.equal(
      imageList(vars, 'IMAGE_BUILD_INPUTS')
        .map((p) => `!${p}`)
        .sort(),
    );
  });
});
