/**
 * dist/ against a real control plane: it applies cleanly and idempotently, the CRD schema and
 * CEL rules reject bad input with clear messages, the manager's Pod passes Pod Security
 * `restricted`, RBAC is least privilege, and owned objects are garbage-collected.
 */
import { expect } from 'chai';
import { mkdtempSync, readFileSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { STORAGE_MIGRATION_ID, synthDist } from '../../infra/app';
import { DIST_VARIANTS, REPO_ROOT } from '../../infra/generate';
import { type ControlPlane } from '../support/control-plane';
import { applyDist } from '../support/dist';
import { freshNamespace, sharedControlPlane } from './setup';
import { eventually } from '../support/eventually';

const SA = 'system:serviceaccount:bucketoperator-system:bucketoperator-controller-manager';

/**
 * `kubectl auth can-i` arguments for `verb` on `resource` or `resource/subresource`: kubectl
 * reads `a/b` as the object named b, so a subresource needs `--subresource`.
 */
function canI(verb: string, resource: string): string[] {
  const [type = resource, sub] = resource.split('/');
  return ['auth', 'can-i', verb, type, ...(sub ? [`--subresource=${sub}`] : [])];
}

function bucketYaml(ns: string, name: string, spec: string): string {
  return `apiVersion: storage.avalonhosting.example/v1
kind: StorageBucket
metadata:
  name: ${name}
  namespace: ${ns}
spec:
${spec}`;
}

describe('dist/ on a real control plane', function () {
  this.timeout(180_000);
  let cp: ControlPlane;
  let ns: string;

  before(async () => {
    cp = await sharedControlPlane();
    await applyDist(cp);
    ns = await freshNamespace(cp, 'manifests');
  });

  it('applies again as a no-op, with -f and with -k', async () => {
    for (const args of [
      ['apply', '-f', join(REPO_ROOT, 'dist')],
      ['apply', '-k', join(REPO_ROOT, 'dist')],
    ]) {
      const res = await cp.kubectl(args);
      expect(res.code, res.stderr).to.equal(0);
      const changed = res.stdout.split('\n').filter((l) => l.trim() && !l.endsWith(' unchanged'));
      expect(changed, res.stdout).to.deep.equal([]);
    }
  });

  it('takes each v2 folder of dist/ over dist/ (server-side dry run), its migrations included', async () => {
    for (const v of DIST_VARIANTS) {
      const res = await cp.kubectl(['apply', '--server-side', '--force-conflicts', '--dry-run=server', '-k', join(REPO_ROOT, 'dist', v.dir)]);
      expect(res.code, `dist/${v.dir}: ${res.stderr}`).to.equal(0);
      expect(res.stdout, v.dir).to.match(
        /customresourcedefinition\.apiextensions\.k8s\.io\/storagebuckets\.storage\.avalonhosting\.example serverside-applied/,
      );
      if (v.files.includes(STORAGE_MIGRATION_ID))
        expect(res.stdout, v.dir).to.match(
          /storageversionmigration\.storagemigration\.k8s\.io\/storagebuckets\.storage\.avalonhosting\.example-to-v\d serverside-applied/,
        );
    }
  });

  describe('rejects invalid StorageBuckets with clear messages', () => {
    const ref = '  providerRef: {name: default}';
    const cases: Record<string, [string, RegExp]> = {
      'missing region': [`  sizeGB: 1\n${ref}`, /spec\.region: Required value/],
      'sizeGB 0': [
        `  region: us-east-1\n  sizeGB: 0\n${ref}`,
        /spec\.sizeGB: Invalid value: 0: spec\.sizeGB in body should be greater than or equal to 1/,
      ],
      'sizeGB -1': [`  region: us-east-1\n  sizeGB: -1\n${ref}`, /should be greater than or equal to 1/],
      'sizeGB 1.5': [`  region: us-east-1\n  sizeGB: 1.5\n${ref}`, /spec\.sizeGB.*must be of type integer/],
      'sizeGB as a string': [`  region: us-east-1\n  sizeGB: "ten"\n${ref}`, /spec\.sizeGB.*must be of type integer/],
      'unknown deletionPolicy': [
        `  region: us-east-1\n  sizeGB: 1\n  deletionPolicy: Retain\n${ref}`,
        /spec\.deletionPolicy: Unsupported value: "Retain"/,
      ],
      'missing providerRef': [`  region: us-east-1\n  sizeGB: 1`, /spec\.providerRef: Required value/],
      'unknown field (strict validation)': [`  region: us-east-1\n  sizeGB: 1\n  colour: red\n${ref}`, /unknown field "spec\.colour"/],
    };

    it('a name that cannot also name a Service', async () => {
      const res = await cp.kubectl(['apply', '-f', '-'], { input: bucketYaml(ns, 'logs.prod', `  region: us-east-1\n  sizeGB: 1\n${ref}`) });
      expect(res.code).to.not.equal(0);
      expect(res.stderr).to.match(/metadata\.name must be a DNS-1035 label/);
    });
    let i = 0;
    for (const [name, [spec, message]] of Object.entries(cases)) {
      it(name, async () => {
        const res = await cp.kubectl(['apply', '-f', '-'], { input: bucketYaml(ns, `bad-${i++}`, spec) });
        expect(res.code).to.not.equal(0);
        expect(res.stderr).to.match(message);
      });
    }

    it('prunes unknown fields when validation is off', async () => {
      const res = await cp.kubectl(['apply', '--validate=false', '-f', '-'], {
        input: bucketYaml(ns, 'pruned', `  region: us-east-1\n  sizeGB: 1\n  colour: red\n${ref}`),
      });
      expect(res.code, res.stderr).to.equal(0);
      const got = await cp.kubectl(['get', 'sbucket', 'pruned', '-n', ns, '-o', 'jsonpath={.spec}']);
      const spec = JSON.parse(got.stdout) as Record<string, unknown>;
      expect(spec).to.not.have.property('colour');
      expect(spec).to.deep.include({ encrypted: false, deletionPolicy: 'Delete' });
    });
  });

  describe('CEL rules guard updates', () => {
    before(async () => {
      const res = await cp.kubectl(['apply', '-f', '-'], {
        input: bucketYaml(ns, 'cel', '  region: us-east-1\n  sizeGB: 10\n  encrypted: false\n  providerRef: {name: default}'),
      });
      expect(res.code, res.stderr).to.equal(0);
    });

    const cases: Record<string, [string, RegExp | null]> = {
      'changing region': ['{"spec":{"region":"eu-west-1"}}', /region is immutable/],
      'shrinking sizeGB': ['{"spec":{"sizeGB":5}}', /sizeGB can only grow/],
      'flipping encrypted': ['{"spec":{"encrypted":true}}', /encrypted is immutable/],
      'changing providerRef': ['{"spec":{"providerRef":{"name":"other"}}}', /providerRef is immutable/],
      'growing sizeGB is allowed': ['{"spec":{"sizeGB":20}}', null],
    };
    for (const [name, [patch, message]] of Object.entries(cases)) {
      it(name, async () => {
        const res = await cp.kubectl(['patch', 'sbucket', 'cel', '-n', ns, '--type=merge', '-p', patch]);
        if (message === null) {
          expect(res.code, res.stderr).to.equal(0);
        } else {
          expect(res.code).to.not.equal(0);
          expect(res.stderr).to.match(message);
        }
      });
    }
  });

  it('shows the printer columns and field descriptions', async () => {
    const created = await cp.kubectl(['apply', '-f', '-'], {
      input: bucketYaml(ns, 'columns', '  region: us-east-1\n  sizeGB: 3\n  providerRef: {name: default}'),
    });
    expect(created.code, created.stderr).to.equal(0);
    const get = await cp.kubectl(['get', 'sbucket', '-n', ns]);
    const [header, row] = get.stdout.split('\n');
    expect(header).to.match(/^NAME\s+READY\s+PHASE\s+ID\s+REGION\s+SIZE\s+AGE$/);
    expect(row).to.match(/^columns\s+us-east-1\s+3\s+\S+$/);
    const explain = await cp.kubectl(['explain', 'storagebucket.spec']);
    expect(explain.code, explain.stderr).to.equal(0);
    expect(explain.stdout).to.include('Capacity in GB');
    expect(explain.stdout).to.include('Immutable once set');
    const byCategory = await cp.kubectl(['get', 'bucketoperator', '-n', ns, '-o', 'name']);
    expect(byCategory.stdout).to.include('storagebucket.storage.avalonhosting.example/columns');
  });

  it('runs the manager Pod under Pod Security restricted and refuses a privileged one', async () => {
    const pods = await eventually(
      async () => {
        const res = await cp.kubectl([
          'get',
          'pods',
          '-n',
          'bucketoperator-system',
          '-l',
          'app.kubernetes.io/component=controller-manager',
          '-o',
          'name',
        ]);
        return res.stdout.trim() ? res.stdout.trim().split('\n') : undefined;
      },
      { description: 'the ReplicaSet controller to create the manager Pod', timeoutMs: 60_000, intervalMs: 500 },
    );
    expect(pods).to.have.length(1);
    const bad = await cp.kubectl(['run', 'privileged', '-n', 'bucketoperator-system', '--image=busybox', '--privileged']);
    expect(bad.code).to.not.equal(0);
    expect(bad.stderr).to.match(/violates PodSecurity "restricted/);
  });

  describe('RBAC of the operator ServiceAccount (cluster mode)', () => {
    const sb = 'storagebuckets.storage.avalonhosting.example';
    const bpc = 'bucketproviderconfigs.storage.avalonhosting.example';
    // Exactly the verbs the operator sends (see test/unit/infra/least-privilege.test.ts).
    const allowed: Array<[string, string, string?]> = [
      ['list', sb],
      ['watch', sb],
      ['patch', sb],
      ['list', bpc],
      ['watch', bpc],
      ['patch', bpc],
      ['patch', `${sb}/status`],
      ['patch', `${bpc}/status`],
      ['update', `${sb}/finalizers`],
      ...['get', 'list', 'watch', 'create', 'patch'].flatMap((v): Array<[string, string]> => [
        [v, 'secrets'],
        [v, 'services'],
      ]),
      ['create', 'events.events.k8s.io'],
      ['patch', 'events.events.k8s.io'],
      ['get', 'leases.coordination.k8s.io', 'bucketoperator-system'],
      ['create', 'leases.coordination.k8s.io', 'bucketoperator-system'],
      ['update', 'leases.coordination.k8s.io', 'bucketoperator-system'],
    ];
    const denied: Array<[string, string, string?]> = [
      ['create', sb],
      ['update', sb],
      ['delete', sb],
      ['get', sb],
      ['update', `${sb}/status`],
      ['get', `${sb}/status`],
      ['update', `${bpc}/finalizers`],
      ...['update', 'delete', 'deletecollection'].flatMap((v): Array<[string, string]> => [
        [v, 'secrets'],
        [v, 'services'],
      ]),
      ['update', 'events.events.k8s.io'],
      ['delete', 'events.events.k8s.io'],
      ['delete', 'customresourcedefinitions.apiextensions.k8s.io'],
      ['create', 'deployments.apps'],
      ['patch', 'leases.coordination.k8s.io', 'bucketoperator-system'],
      ['list', 'leases.coordination.k8s.io', 'bucketoperator-system'],
      ['update', 'leases.coordination.k8s.io', 'default'],
      ['create', 'serviceaccounts/token'],
      ['create', 'validatingadmissionpolicies.admissionregistration.k8s.io'],
      ['delete', 'validatingadmissionpolicybindings.admissionregistration.k8s.io'],
      ['create', 'clusterroles.rbac.authorization.k8s.io'],
      ['escalate', 'clusterroles.rbac.authorization.k8s.io'],
      ['bind', 'clusterroles.rbac.authorization.k8s.io'],
      ['impersonate', 'serviceaccounts'],
      ['create', 'pods'],
      ['get', 'nodes'],
    ];
    for (const [want, table] of [
      ['yes', allowed],
      ['no', denied],
    ] as const) {
      for (const [verb, resource, namespace] of table) {
        it(`${want === 'yes' ? 'may' : 'may not'} ${verb} ${resource}${namespace ? ` in ${namespace}` : ''}`, async () => {
          const res = await cp.kubectl([...canI(verb, resource), `--as=${SA}`, '-n', namespace ?? ns]);
          expect(res.stdout.trim()).to.equal(want);
        });
      }
    }
  });

  describe('RBAC in single-namespace mode', () => {
    let tmp: string;
    let teamNs: string;
    let otherNs: string;
    const sa = 'system:serviceaccount:bucketoperator-nsmode:bucketoperator-controller-manager';

    before(async () => {
      teamNs = await freshNamespace(cp, 'team');
      otherNs = await freshNamespace(cp, 'other');
      tmp = mkdtempSync(join(tmpdir(), 'bucketoperator-nsmode-'));
      synthDist({ outdir: tmp, operator: { namespace: 'bucketoperator-nsmode', mode: 'namespace', watchNamespace: teamNs } });
      for (const f of ['01-namespace.yaml', '02-rbac.yaml', '03-admission-policy.yaml', '04-manager.yaml']) {
        const res = await cp.kubectl(['apply', '-f', '-'], { input: readFileSync(join(tmp, f), 'utf8') });
        expect(res.code, res.stderr).to.equal(0);
      }
    });
    after(() => rmSync(tmp, { recursive: true, force: true }));

    const cases: Array<[string, string, 'team' | 'other', 'yes' | 'no']> = [
      ['get', 'secrets', 'team', 'yes'],
      ['create', 'secrets', 'team', 'yes'],
      ['patch', 'services', 'team', 'yes'],
      ['update', 'storagebuckets.storage.avalonhosting.example/finalizers', 'team', 'yes'],
      ['watch', 'storagebuckets.storage.avalonhosting.example', 'team', 'yes'],
      ['delete', 'secrets', 'team', 'no'],
      ['update', 'secrets', 'team', 'no'],
      ['delete', 'services', 'team', 'no'],
      ['get', 'secrets', 'other', 'no'],
      ['create', 'secrets', 'other', 'no'],
      ['list', 'storagebuckets.storage.avalonhosting.example', 'other', 'no'],
    ];
    for (const [verb, resource, where, want] of cases) {
      it(`${want === 'yes' ? 'may' : 'may not'} ${verb} ${resource} in the ${where} namespace`, async () => {
        const res = await cp.kubectl([...canI(verb, resource), `--as=${sa}`, '-n', where === 'team' ? teamNs : otherNs]);
        expect(res.stdout.trim()).to.equal(want);
      });
    }
  });

  it('garbage-collects a Secret owned by a deleted StorageBucket', async () => {
    const res = await cp.kubectl(['apply', '-f', '-'], {
      input: bucketYaml(ns, 'owner', '  region: us-east-1\n  sizeGB: 1\n  providerRef: {name: default}'),
    });
    expect(res.code, res.stderr).to.equal(0);
    const uid = (await cp.kubectl(['get', 'sbucket', 'owner', '-n', ns, '-o', 'jsonpath={.metadata.uid}'])).stdout;
    const secret = {
      apiVersion: 'v1',
      kind: 'Secret',
      metadata: {
        name: 'owner-access',
        namespace: ns,
        ownerReferences: [
          { apiVersion: 'storage.avalonhosting.example/v1', kind: 'StorageBucket', name: 'owner', uid, controller: true, blockOwnerDeletion: true },
        ],
      },
      stringData: { bucketId: 'x' },
    };
    expect((await cp.kubectl(['apply', '-f', '-'], { input: JSON.stringify(secret) })).code).to.equal(0);
    expect((await cp.kubectl(['delete', 'sbucket', 'owner', '-n', ns, '--wait=true'])).code).to.equal(0);
    await eventually(async () => (await cp.kubectl(['get', 'secret', 'owner-access', '-n', ns])).code !== 0, {
      description: 'the garbage collector to delete owner-access',
      timeoutMs: 60_000,
      intervalMs: 500,
    });
  });
});
