import { expect } from 'chai';
import type { ImageConfig } from '../../support/dockerfile';
import { distDeployment } from '../../support/dist';
import { localInvocation, type ContainerLike, type DeploymentLike, type LocalRun } from '../../support/deployment-invocation';
import { operatorImageConfig } from '../../support/image';

const IMAGE: ImageConfig = {
  workdir: '/app',
  env: { NODE_ENV: 'production' },
  entrypoint: ['/nodejs/bin/node', 'operator/main.js'],
  cmd: [],
};

function deployment(container: Partial<ContainerLike>): DeploymentLike {
  return {
    metadata: { name: 'op', namespace: 'op-system' },
    spec: {
      template: {
        metadata: { annotations: { 'kubectl.kubernetes.io/default-container': 'manager' } },
        spec: { containers: [{ name: 'sidecar' }, { name: 'manager', ...container }] },
      },
    },
  };
}

const RUN: LocalRun = { imageDir: '/tmp/image', nodeBinary: '/usr/bin/node20', fieldRefs: { 'metadata.name': 'op-local' } };

interface Case {
  readonly deployment: DeploymentLike;
  readonly image?: ImageConfig;
  readonly run?: Partial<LocalRun>;
  readonly want?: { nodeArgs?: string[]; script?: string; args?: string[]; env?: Record<string, string> };
  readonly throws?: RegExp;
}

const cases: Record<string, Case> = {
  'runs the ENTRYPOINT script from the image directory with the Deployment args': {
    deployment: deployment({ args: ['--leader-elect=true', '--max-concurrent-reconciles=8'] }),
    want: { nodeArgs: [], script: '/tmp/image/operator/main.js', args: ['--leader-elect=true', '--max-concurrent-reconciles=8'] },
  },
  'replaces the value of a flag the Deployment passes, in place': {
    deployment: deployment({ args: ['--metrics-bind-address=0.0.0.0:8080', '--leader-elect=true'] }),
    run: { flags: { 'metrics-bind-address': '127.0.0.1:4000' } },
    want: { args: ['--metrics-bind-address=127.0.0.1:4000', '--leader-elect=true'] },
  },
  'gives a bare boolean flag a value': {
    deployment: deployment({ args: ['--leader-elect'] }),
    run: { flags: { 'leader-elect': 'false' } },
    want: { args: ['--leader-elect=false'] },
  },
  'appends a local-only flag the Deployment does not pass': {
    deployment: deployment({ args: ['--leader-elect=true'] }),
    run: { flags: { kubeconfig: '/tmp/kc', 'poll-interval': '500ms' } },
    want: { args: ['--leader-elect=true', '--kubeconfig=/tmp/kc', '--poll-interval=500ms'] },
  },
  'refuses to add a flag the Deployment does not pass (a renamed flag)': {
    deployment: deployment({ args: ['--metrics-addr=0.0.0.0:8080'] }),
    run: { flags: { 'metrics-bind-address': '127.0.0.1:4000' } },
    throws: /override --metrics-bind-address: the Deployment does not pass it and it is not a local-only flag/,
  },
  'refuses an override written with dashes': {
    deployment: deployment({ args: [] }),
    run: { flags: { '--kubeconfig': '/tmp/kc' } },
    throws: /give flag names without dashes/,
  },
  'refuses a container arg that is not --name[=value]': {
    deployment: deployment({ args: ['--watch-namespace', 'team-a'] }),
    throws: /container arg "team-a" is not of the form/,
  },
  'uses the image CMD when the container has no args': {
    deployment: deployment({}),
    image: { ...IMAGE, cmd: ['--log-level=info'] },
    want: { args: ['--log-level=info'] },
  },
  'lets a container command replace the ENTRYPOINT, keeping node options': {
    deployment: deployment({ command: ['node', '--enable-source-maps', '/app/operator/other.js'], args: ['--leader-elect=true'] }),
    want: { nodeArgs: ['--enable-source-maps'], script: '/tmp/image/operator/other.js', args: ['--leader-elect=true'] },
  },
  'drops the image CMD when a container command is set without args': {
    deployment: deployment({ command: ['/nodejs/bin/node', 'operator/main.js'] }),
    image: { ...IMAGE, cmd: ['--log-level=info'] },
    want: { args: [] },
  },
  'refuses a command that is not a Node script': {
    deployment: deployment({ command: ['/bin/sh', '-c', 'node operator/main.js'] }),
    throws: /not a Node script/,
  },
  'refuses a script outside the WORKDIR': {
    deployment: deployment({ command: ['node', '/etc/main.js'] }),
    throws: /outside the image's WORKDIR/,
  },
  'keeps env values exactly and puts them over the image ENV': {
    deployment: deployment({
      env: [
        { name: 'NODE_OPTIONS', value: '--max-old-space-size=192' },
        { name: 'NODE_ENV', value: 'staging' },
      ],
    }),
    want: { env: { NODE_ENV: 'staging', NODE_OPTIONS: '--max-old-space-size=192' } },
  },
  'resolves fieldRefs: the namespace from the Deployment, the Pod name from the run': {
    deployment: deployment({
      env: [
        { name: 'POD_NAME', valueFrom: { fieldRef: { fieldPath: 'metadata.name' } } },
        { name: 'POD_NAMESPACE', valueFrom: { fieldRef: { fieldPath: 'metadata.namespace' } } },
      ],
    }),
    want: { env: { NODE_ENV: 'production', POD_NAME: 'op-local', POD_NAMESPACE: 'op-system' } },
  },
  'refuses a fieldRef without a local value': {
    deployment: deployment({ env: [{ name: 'NODE_IP', valueFrom: { fieldRef: { fieldPath: 'status.hostIP' } } }] }),
    throws: /env NODE_IP: no local value for fieldRef status.hostIP/,
  },
  'refuses a Secret reference': {
    deployment: deployment({ env: [{ name: 'TOKEN', valueFrom: { secretKeyRef: { name: 's', key: 'k' } } }] }),
    throws: /env TOKEN: only fieldRef values can be resolved locally/,
  },
  'refuses envFrom': {
    deployment: deployment({ envFrom: [{ configMapRef: { name: 'c' } }] }),
    throws: /envFrom cannot be resolved locally/,
  },
  'refuses a container that is not there': {
    deployment: deployment({}),
    run: { container: 'missing' },
    throws: /no container "missing"/,
  },
};

describe('localInvocation (the Deployment started on this machine)', () => {
  for (const [name, tc] of Object.entries(cases)) {
    it(name, () => {
      const call = () => localInvocation(tc.deployment, tc.image ?? IMAGE, { ...RUN, ...tc.run });
      if (tc.throws) {
        expect(call).to.throw(tc.throws);
        return;
      }
      const got = call();
      expect(got.file).to.equal('/usr/bin/node20');
      if (tc.want?.nodeArgs) expect(got.nodeArgs).to.deep.equal(tc.want.nodeArgs);
      if (tc.want?.script) expect(got.script).to.equal(tc.want.script);
      if (tc.want?.args) expect(got.args).to.deep.equal(tc.want.args);
      if (tc.want?.env) expect(got.env).to.deep.equal(tc.want.env);
    });
  }

  it('accepts every override operator-process makes of the Deployment in dist/', () => {
    const got = localInvocation(distDeployment(), operatorImageConfig(), {
      ...RUN,
      flags: {
        kubeconfig: '/tmp/kc',
        'metrics-bind-address': '127.0.0.1:1',
        'health-probe-bind-address': '127.0.0.1:2',
        'poll-interval': '500ms',
        'drift-interval': '60s',
        'log-level': 'debug',
        'leader-election-id': 'test',
      },
    });
    expect(got.script).to.equal('/tmp/image/operator/main.js');
    expect(got.args).to.include.members(['--metrics-bind-address=127.0.0.1:1', '--health-probe-bind-address=127.0.0.1:2', '--kubeconfig=/tmp/kc']);
    expect(got.env['POD_NAME']).to.equal('op-local');
    expect(got.env['NODE_ENV']).to.equal('production');
  });
});
