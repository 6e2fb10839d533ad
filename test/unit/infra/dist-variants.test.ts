/**
 * The folders of dist/ for YAML users who move to v2 (dist/v2, dist/v2-stored,
 * dist/v2-back-to-v1), read as committed: each is a whole install that differs from the one
 * before it only where its step says, so a GitOps Application can move from folder to folder.
 */
import { expect } from 'chai';
import { readdirSync, readFileSync } from 'node:fs';
import { join } from 'node:path';
import { parse, parseAllDocuments } from 'yaml';
import { DIST_VARIANTS, REPO_ROOT } from '../../../infra/generate';

interface Obj {
  apiVersion: string;
  kind: string;
  metadata: { name: string; namespace?: string };
  spec?: Record<string, unknown>;
}
interface CrdVersion {
  name: string;
  served: boolean;
  storage: boolean;
}

const DIST = join(REPO_ROOT, 'dist');

function objects(dir: string): Obj[] {
  return readdirSync(dir)
    .filter((f) => f.endsWith('.yaml'))
    .sort()
    .flatMap((f) => parseAllDocuments(readFileSync(join(dir, f), 'utf8')).map((d) => d.toJS() as Obj));
}
const key = (o: Obj) => `${o.kind}/${o.metadata.namespace ?? ''}/${o.metadata.name}`;
const crds = (objs: Obj[]) => objs.filter((o) => o.kind === 'CustomResourceDefinition');
const stored = (crd: Obj) => ((crd.spec?.['versions'] ?? []) as CrdVersion[]).filter((v) => v.storage).map((v) => v.name);
const served = (crd: Obj) => ((crd.spec?.['versions'] ?? []) as CrdVersion[]).filter((v) => v.served).map((v) => v.name);
function operatorArgs(objs: Obj[]): string[] {
  const deployment = objs.find((o) => o.kind === 'Deployment') as unknown as {
    spec: { template: { spec: { containers: Array<{ name: string; args?: string[] }> } } };
  };
  return deployment.spec.template.spec.containers[0]?.args ?? [];
}
function migrations(objs: Obj[]): Array<{ name: string; resource: unknown }> {
  return objs.filter((o) => o.kind === 'StorageVersionMigration').map((o) => ({ name: o.metadata.name, resource: o.spec?.['resource'] }));
}

describe('dist/ folders for serving and storing v2', () => {
  const base = objects(DIST);

  it('dist/ itself serves and stores v1 only and has no migration', () => {
    for (const crd of crds(base)) {
      expect(served(crd), crd.metadata.name).to.deep.equal(['v1']);
      expect(stored(crd), crd.metadata.name).to.deep.equal(['v1']);
    }
    expect(migrations(base)).to.deep.equal([]);
  });

  for (const v of DIST_VARIANTS) {
    it(`dist/${v.dir}/ is a whole install: every object of dist/ is there, and its Kustomization lists its files`, () => {
      const dir = join(DIST, v.dir);
      const objs = objects(dir);
      const names = new Set(objs.map(key));
      for (const o of base) expect(names.has(key(o)), `${key(o)} missing from dist/${v.dir}`).to.equal(true);
      const kustomization = parse(readFileSync(join(dir, 'Kustomization'), 'utf8')) as { resources: string[] };
      expect(kustomization.resources).to.deep.equal(
        readdirSync(dir)
          .filter((f) => f.endsWith('.yaml'))
          .sort(),
      );
    });
  }

  it('dist/v2/ serves v2 through the webhook, keeps v1 stored, and the operator on v1', () => {
    const objs = objects(join(DIST, 'v2'));
    for (const crd of crds(objs)) {
      expect(served(crd), crd.metadata.name).to.deep.equal(['v1', 'v2']);
      expect(stored(crd), crd.metadata.name).to.deep.equal(['v1']);
      expect((crd.spec?.['conversion'] as { strategy?: string }).strategy).to.equal('Webhook');
    }
    expect(operatorArgs(objs)).to.include('--api-version=v1');
    expect(objs.filter((o) => o.kind === 'PodDisruptionBudget')).to.have.length(1);
    expect(migrations(objs)).to.deep.equal([]);
  });

  for (const [dir, version] of [
    ['v2-stored', 'v2'],
    ['v2-back-to-v1', 'v1'],
  ] as const) {
    it(`dist/${dir}/ stores ${version}, runs the operator on ${version} and migrates both kinds to it`, () => {
      const objs = objects(join(DIST, dir));
      for (const crd of crds(objs)) {
        expect(served(crd), crd.metadata.name).to.deep.equal(['v1', 'v2']);
        expect(stored(crd), crd.metadata.name).to.deep.equal([version]);
      }
      expect(operatorArgs(objs)).to.include(`--api-version=${version}`);
      expect(migrations(objs)).to.deep.equal(
        ['storagebuckets', 'bucketproviderconfigs'].map((resource) => ({
          name: `${resource}.storage.avalonhosting.example-to-${version}`,
          resource: { group: 'storage.avalonhosting.example', resource },
        })),
      );
    });
  }
});
