/**
 * The OCI image and operator/Dockerfile are one recipe: scripts/build-oci-image.ts applies the
 * Dockerfile's runtime stage instruction by instruction, so every instruction there must be one
 * the builder applies (any other fails here, before it fails a build), the base it starts FROM
 * must be the one the builder makes (pinned Node major, Debian release of the package list), and
 * /app holds what the stage's COPYs name. The same holds for the provider's Dockerfile.
 */
import { expect } from 'chai';
import { execFileSync } from 'node:child_process';
import { mkdirSync, mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { appLayer, checkBase, creationTime, distOperatorImage, imageSources } from '../../../scripts/build-oci-image';
import { bundleProvider } from '../../../scripts/bundle';
import { normalizeRef } from '../../../scripts/oci/archive';
import { distrolessConfig } from '../../../scripts/oci/base';
import { parseDockerfile, runtimeRecipe, type Stage } from '../../../scripts/oci/dockerfile';
import { parsePackageList } from '../../../scripts/oci/packages';
import { lockedNode, pinnedNode } from '../../../scripts/pinned-node';
import { imageConfig, parseDockerfile as parseForTests } from '../../support/dockerfile';
import { DOCKERFILE, REPO } from '../../support/image';

const PROVIDER_DOCKERFILE = join(REPO, 'scripts', 'oci', 'provider.Dockerfile');
const operatorText = readFileSync(DOCKERFILE, 'utf8');
const providerText = readFileSync(PROVIDER_DOCKERFILE, 'utf8');
const list = parsePackageList(readFileSync(join(REPO, 'scripts', 'image-packages.txt'), 'utf8'));
const pkg = JSON.parse(readFileSync(join(REPO, 'package.json'), 'utf8')) as { version: string };
const recipeOf = (text: string) => runtimeRecipe(parseDockerfile(text), distrolessConfig());

describe('the OCI image follows operator/Dockerfile (scripts/build-oci-image.ts)', () => {
  it('applies every instruction of the runtime stage, to the config the Dockerfile gives', () => {
    const recipe = recipeOf(operatorText);
    const docker = imageConfig(parseForTests(operatorText));
    expect(recipe.config.Entrypoint).to.deep.equal(docker.entrypoint);
    expect(recipe.config.Cmd).to.equal(undefined);
    expect(recipe.config.WorkingDir).to.equal(docker.workdir);
    expect(recipe.config.User).to.equal(docker.user);
    for (const [key, value] of Object.entries(docker.env)) expect(recipe.config.Env).to.include(`${key}=${value}`);
    // distroless' own variables stay: Node finds the CA bundle, PATH is set.
    expect(recipe.config.Env).to.include('SSL_CERT_FILE=/etc/ssl/certs/ca-certificates.crt');
    const exposed = operatorText
      .split('\n')
      .filter((l) => l.startsWith('EXPOSE '))
      .flatMap((l) => l.slice(7).trim().split(/\s+/))
      .map((p) => `${p}/tcp`);
    expect(Object.keys(recipe.config.ExposedPorts ?? {}).sort()).to.deep.equal(exposed.sort());
  });

  const unapplied = [
    'HEALTHCHECK CMD ["/nodejs/bin/node", "-e", "0"]',
    'VOLUME /data',
    'STOPSIGNAL SIGINT',
    'RUN ["/nodejs/bin/node", "-e", "0"]',
    'ARG VERSION',
  ];
  for (const line of unapplied) {
    it(`fails when the runtime stage says something the builder does not apply: ${line.split(' ')[0]}`, () => {
      expect(() => recipeOf(`${operatorText}\n${line}\n`)).to.throw(/not applied by the image builder/);
    });
  }

  it("starts FROM the base the builder makes: the pinned Node major on the package list's Debian", () => {
    const { version } = lockedNode(REPO);
    expect(() => checkBase(recipeOf(operatorText), 'operator/Dockerfile', version, list)).not.to.throw();
    const elsewhere = operatorText.replace(/nodejs(\d+)-debian13/, 'nodejs$1-debian12');
    expect(() => checkBase(recipeOf(elsewhere), 'operator/Dockerfile', version, list)).to.throw(/debian12.*debian13/);
    expect(() => checkBase(recipeOf(operatorText), 'operator/Dockerfile', '24.22.3', list)).to.throw(/nodejs24-debian13/);
  });

  describe('/app from the local build', () => {
    let dir: string;
    beforeEach(() => {
      dir = mkdtempSync(join(tmpdir(), 'oci-app-'));
      mkdirSync(join(dir, 'operator'));
      writeFileSync(join(dir, 'operator', 'main.js'), 'module.exports = 1;\n', { mode: 0o600 });
      writeFileSync(join(dir, 'package.json'), '{}\n');
      writeFileSync(join(dir, '.build-stamp'), 'x\n');
    });
    afterEach(() => rmSync(dir, { recursive: true, force: true }));

    it('holds what the COPYs name, at their targets below WORKDIR, owned as docker build owns them', () => {
      const entries = appLayer(recipeOf(operatorText), dir, REPO);
      const summary = entries.map((e) => `${e.type} ${e.path} ${e.type === 'symlink' ? e.target : `${e.mode.toString(8)} ${e.uid ?? 0}`}`).sort();
      // BuildKit makes WORKDIR's directory as the USER in force, which is distroless' nonroot
      // (the base's config) until the stage's own USER; COPY without --chown gives root.
      expect(summary).to.deep.equal([
        'dir /app 755 65532',
        'dir /app/operator 755 0',
        'file /app/operator/main.js 644 0',
        'file /app/package.json 644 0',
      ]);
    });

    it('refuses a local build holding more than the COPYs name', () => {
      writeFileSync(join(dir, 'stray.js'), '');
      expect(() => appLayer(recipeOf(operatorText), dir, REPO)).to.throw(
        /holds \[operator, package.json, stray.js\] but the runtime stage copies \[operator, package.json\]/,
      );
    });

    it('refuses a local build missing what a COPY names', () => {
      rmSync(join(dir, 'package.json'));
      expect(() => appLayer(recipeOf(operatorText), dir, REPO)).to.throw(/has no package.json/);
    });
  });

  it('names the operator image as dist/ runs it, with the package version', () => {
    const sources = imageSources(REPO);
    const dist = distOperatorImage(readFileSync(join(REPO, 'dist', '04-manager.yaml'), 'utf8'));
    expect(sources.operator.ref).to.equal(dist);
    expect(normalizeRef(dist)).to.equal(`docker.io/library/bucketoperator:${pkg.version}`);
    expect(sources.provider.ref).to.equal(`bucketoperator-provider:${pkg.version}`);
  });

  it('creation time: the epoch, or SOURCE_DATE_EPOCH', () => {
    expect(creationTime({})).to.equal('1970-01-01T00:00:00Z');
    expect(creationTime({ SOURCE_DATE_EPOCH: '1796400000' })).to.equal('2026-12-04T16:00:00Z');
    expect(() => creationTime({ SOURCE_DATE_EPOCH: 'yesterday' })).to.throw(/whole seconds/);
  });
});

describe('the provider image (scripts/oci/provider.Dockerfile)', function () {
  this.timeout(60_000);
  const stages = parseDockerfile(providerText);
  const operatorStages = parseDockerfile(operatorText);
  const contextSources = (s: Stage) =>
    s.instructions
      .filter((i) => i.keyword === 'COPY' && !i.args.startsWith('--'))
      .flatMap((i) => i.args.split(/\s+/).slice(0, -1))
      .sort();

  it("is built on the operator image's stages: the same build and runtime bases", () => {
    expect(stages.map((s) => [s.base, s.platform])).to.deep.equal(operatorStages.map((s) => [s.base, s.platform]));
  });

  it('listens on all addresses, on the port it exposes, as a Service needs', () => {
    const recipe = recipeOf(providerText);
    expect(recipe.config.Entrypoint).to.deep.equal(['/nodejs/bin/node', 'provider/main.js']);
    const cmd = recipe.config.Cmd ?? [];
    expect(cmd[cmd.indexOf('--host') + 1]).to.equal('0.0.0.0');
    expect(Object.keys(recipe.config.ExposedPorts ?? {})).to.deep.equal([`${cmd[cmd.indexOf('--port') + 1]}/tcp`]);
    expect(recipe.config.User).to.equal(recipeOf(operatorText).config.User);
  });

  it('its .dockerignore sends exactly what its build stage copies', () => {
    const ignore = readFileSync(`${PROVIDER_DOCKERFILE}.dockerignore`, 'utf8')
      .split('\n')
      .map((l) => l.trim())
      .filter((l) => l && !l.startsWith('#'));
    expect(ignore[0]).to.equal('*');
    expect(ignore.slice(1).sort()).to.deep.equal(contextSources(stages[0] as Stage).map((p) => `!${p}`));
  });

  it('its build stage bundles with the command the local build runs, and the bundle starts', async () => {
    expect(stages[0]?.instructions.map((i) => i.args)).to.include('npx tsx scripts/bundle.ts --provider bundle');
    const dir = mkdtempSync(join(tmpdir(), 'oci-provider-'));
    try {
      await bundleProvider(REPO, dir);
      const help = execFileSync(pinnedNode(REPO).path, [join(dir, 'provider', 'main.js'), '--help'], { encoding: 'utf8', cwd: dir });
      expect(help).to.match(/^Usage: /);
      expect(help).to.include('--host ADDR');
    } finally {
      rmSync(dir, { recursive: true, force: true });
    }
  });
});
