/**
 * The runtime stage as a recipe: Docker's semantics for the instructions the image builder
 * applies, and a refusal, naming it, of every instruction or form it does not apply.
 */
import { expect } from 'chai';
import type { ImageConfig } from '../../../scripts/oci/archive';
import { parseDockerfile, runtimeRecipe, userIds, type RuntimeRecipe } from '../../../scripts/oci/dockerfile';

const BASE: ImageConfig = {
  Env: ['PATH=/usr/bin', 'SSL_CERT_FILE=/etc/ssl/certs/ca-certificates.crt'],
  User: '65532',
  WorkingDir: '/home/nonroot',
  Entrypoint: ['/nodejs/bin/node'],
};

const recipe = (runtime: string, base: ImageConfig = BASE): RuntimeRecipe =>
  runtimeRecipe(parseDockerfile(`FROM node:26 AS build\nRUN true\n\nFROM gcr.io/distroless/nodejs26-debian13:nonroot\n${runtime}\n`), base);

describe('scripts/oci/dockerfile: runtimeRecipe', () => {
  const cases: Record<string, { runtime: string; base?: ImageConfig; want: (r: RuntimeRecipe) => void }> = {
    'WORKDIR sets the working directory and creates it as the USER in force': {
      runtime: 'USER 0\nWORKDIR /app\nWORKDIR sub\nUSER 65532:65532',
      want: (r) => {
        expect(r.config.WorkingDir).to.equal('/app/sub');
        expect(r.workdirs).to.deep.equal([
          { path: '/app', uid: 0, gid: 0 },
          { path: '/app/sub', uid: 0, gid: 0 },
        ]);
        expect(r.config.User).to.equal('65532:65532');
      },
    },
    'ENV adds variables and replaces one of the same name': {
      runtime: 'ENV NODE_ENV=production PATH=/bin\nENV LEGACY some value',
      want: (r) =>
        expect(r.config.Env).to.deep.equal([
          'PATH=/bin',
          'SSL_CERT_FILE=/etc/ssl/certs/ca-certificates.crt',
          'NODE_ENV=production',
          'LEGACY=some value',
        ]),
    },
    'ENTRYPOINT resets an inherited CMD': {
      runtime: 'ENTRYPOINT ["/nodejs/bin/node", "main.js"]',
      base: { ...BASE, Cmd: ['--inherited'] },
      want: (r) => expect(r.config.Cmd).to.equal(undefined),
    },
    'a CMD after ENTRYPOINT sets the arguments': {
      runtime: 'ENTRYPOINT ["/nodejs/bin/node", "main.js"]\nCMD ["--port", "8090"]',
      want: (r) => {
        expect(r.config.Entrypoint).to.deep.equal(['/nodejs/bin/node', 'main.js']);
        expect(r.config.Cmd).to.deep.equal(['--port', '8090']);
      },
    },
    'EXPOSE defaults to tcp': {
      runtime: 'EXPOSE 8080 8081/udp',
      want: (r) => expect(r.config.ExposedPorts).to.deep.equal({ '8080/tcp': {}, '8081/udp': {} }),
    },
    'LABEL takes quoted values': {
      runtime: 'LABEL org.opencontainers.image.title="bucket operator" version=1',
      want: (r) => expect(r.config.Labels).to.deep.equal({ 'org.opencontainers.image.title': 'bucket operator', version: '1' }),
    },
    'COPY resolves against WORKDIR, into a directory when the destination ends in /': {
      runtime:
        'WORKDIR /app\nCOPY --from=build /src/package.json ./package.json\nCOPY --from=build --chown=65532:65532 /src/a /src/b lib/\nCOPY README.md /doc/',
      want: (r) =>
        expect(r.copies).to.deep.equal([
          { from: 'build', source: '/src/package.json', target: '/app/package.json', uid: 0, gid: 0 },
          { from: 'build', source: '/src/a', target: '/app/lib/a', uid: 65532, gid: 65532 },
          { from: 'build', source: '/src/b', target: '/app/lib/b', uid: 65532, gid: 65532 },
          { source: 'README.md', target: '/doc/README.md', uid: 0, gid: 0 },
        ]),
    },
    'the base config stays as it was': {
      runtime: 'ENV A=1\nEXPOSE 1',
      want: () => expect(BASE.Env).to.have.length(2),
    },
  };
  for (const [name, tc] of Object.entries(cases)) it(name, () => tc.want(recipe(tc.runtime, tc.base)));

  const refused: Record<string, { runtime: string; error: RegExp }> = {
    RUN: { runtime: 'RUN echo hi', error: /RUN is not applied/ },
    HEALTHCHECK: { runtime: 'HEALTHCHECK NONE', error: /HEALTHCHECK is not applied/ },
    VOLUME: { runtime: 'VOLUME /data', error: /VOLUME is not applied/ },
    STOPSIGNAL: { runtime: 'STOPSIGNAL SIGINT', error: /STOPSIGNAL is not applied/ },
    ADD: { runtime: 'ADD https://example.com/x /x', error: /ADD is not applied/ },
    ARG: { runtime: 'ARG VERSION', error: /ARG is not applied/ },
    SHELL: { runtime: 'SHELL ["/bin/sh", "-c"]', error: /SHELL is not applied/ },
    'ENTRYPOINT in shell form': { runtime: 'ENTRYPOINT node main.js', error: /exec \(JSON array\) form/ },
    'COPY --chmod': { runtime: 'COPY --chmod=755 a /a', error: /--chmod=755 is not applied/ },
    'COPY --link': { runtime: 'COPY --link a /a', error: /--link is not applied/ },
    'COPY with a glob': { runtime: 'COPY *.json /app/', error: /no globs/ },
    'COPY from a stage that does not exist': { runtime: 'COPY --from=nope /a /a', error: /names no earlier stage/ },
    'ENV with a variable': { runtime: 'ENV PATH=$PATH:/x', error: /without escapes or variables/ },
    'USER by an unknown name': { runtime: 'USER node', error: /neither numeric nor root\/nonroot/ },
    'EXPOSE a range': { runtime: 'EXPOSE 8000-8010', error: /not PORT/ },
  };
  for (const [name, tc] of Object.entries(refused)) {
    it(`refuses ${name}`, () => expect(() => recipe(tc.runtime)).to.throw(tc.error));
  }

  it('reads continuations and skips comments', () => {
    const r = recipe('# a comment\nENV A=1 \\\n    B=2\nEXPOSE 1');
    expect(r.config.Env?.slice(-2)).to.deep.equal(['A=1', 'B=2']);
  });

  it('userIds: numeric ids and distroless names', () => {
    expect(userIds('65532')).to.deep.equal({ uid: 65532, gid: 65532 });
    expect(userIds('1:2')).to.deep.equal({ uid: 1, gid: 2 });
    expect(userIds('nonroot:root')).to.deep.equal({ uid: 65532, gid: 0 });
  });
});
