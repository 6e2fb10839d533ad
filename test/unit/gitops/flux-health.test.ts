import { expect } from 'chai';
import { readdirSync, readFileSync } from 'node:fs';
import { join, relative } from 'node:path';
import { parse } from 'yaml';
import { IN_USE_REASON } from '../../../operator/bucket/config-reconciler';
import { BUCKET_TERMINAL_REASONS, CONFIG_TERMINAL_REASONS } from '../../../operator/bucket/reason-classes';
import { Reason } from '../../../operator/bucket/reasons';
import { CUSTOMIZATIONS_DIR, customizations, evaluateFluxHealth as evaluate, fluxExprs, readObject, type FluxStatus } from '../../support/gitops';
import { GITOPS_DOC, fluxKustomization } from '../../support/gitops-docs';
import { asV2 } from '../../support/as-v2';

/**
 * What Flux reports for each testdata object (paths relative to resource_customizations).
 * Flux has no Suspended: a paused bucket counts only if it was Ready at its generation.
 */
const EXPECTED: Record<string, FluxStatus> = {
  'storage.avalonhosting.example/StorageBucket/testdata/healthy_ready.yaml': 'Current',
  'storage.avalonhosting.example/StorageBucket/testdata/progressing_provisioning.yaml': 'InProgress',
  'storage.avalonhosting.example/StorageBucket/testdata/progressing_noStatus.yaml': 'Unknown',
  'storage.avalonhosting.example/StorageBucket/testdata/progressing_newGeneration.yaml': 'InProgress',
  'storage.avalonhosting.example/StorageBucket/testdata/progressing_providerConfigNotFound.yaml': 'InProgress',
  'storage.avalonhosting.example/StorageBucket/testdata/progressing_staleTerminal.yaml': 'InProgress',
  'storage.avalonhosting.example/StorageBucket/testdata/degraded_invalidSpec.yaml': 'Failed',
  'storage.avalonhosting.example/StorageBucket/testdata/degraded_credentialsRejected.yaml': 'Failed',
  'storage.avalonhosting.example/StorageBucket/testdata/degraded_providerChanged.yaml': 'Failed',
  'storage.avalonhosting.example/StorageBucket/testdata/degraded_adoptTargetNotFound.yaml': 'Failed',
  'storage.avalonhosting.example/StorageBucket/testdata/suspended_paused.yaml': 'InProgress',
  'storage.avalonhosting.example/StorageBucket/testdata/suspended_pausedReady.yaml': 'Current',
  'storage.avalonhosting.example/BucketProviderConfig/testdata/healthy_ready.yaml': 'Current',
  'storage.avalonhosting.example/BucketProviderConfig/testdata/progressing_secretNotFound.yaml': 'InProgress',
  'storage.avalonhosting.example/BucketProviderConfig/testdata/progressing_noStatus.yaml': 'Unknown',
  'storage.avalonhosting.example/BucketProviderConfig/testdata/degraded_invalidProviderConfig.yaml': 'Failed',
  'storage.avalonhosting.example/BucketProviderConfig/testdata/degraded_secretNotLabeled.yaml': 'Failed',
};

const exprs = fluxExprs();

describe('Flux healthCheckExprs (cel-go, as kustomize-controller evaluates them)', () => {
  it('cover both kinds in both served versions', () => {
    expect(exprs.map((e) => `${e.apiVersion} ${e.kind}`).sort()).to.deep.equal([
      'storage.avalonhosting.example/v1 BucketProviderConfig',
      'storage.avalonhosting.example/v1 StorageBucket',
      'storage.avalonhosting.example/v2 BucketProviderConfig',
      'storage.avalonhosting.example/v2 StorageBucket',
    ]);
  });

  it('every testdata object has an expected Flux status', () => {
    const files: string[] = [];
    for (const c of customizations()) {
      for (const f of readdirSync(join(c.dir, 'testdata'))) files.push(relative(CUSTOMIZATIONS_DIR, join(c.dir, 'testdata', f)));
    }
    expect(files.sort()).to.deep.equal(Object.keys(EXPECTED).sort());
  });

  describe('testdata', () => {
    const entries = Object.entries(EXPECTED);
    let got: FluxStatus[] = [];
    before(() => {
      got = evaluate(entries.map(([path]) => readObject(join(CUSTOMIZATIONS_DIR, path))));
    });
    entries.forEach(([path, want], i) => {
      it(`${path}: ${want}`, () => expect(got[i]).to.equal(want));
    });
  });

  describe('testdata converted to v2 (as a GitOps repository written in v2 holds it)', () => {
    const entries = Object.entries(EXPECTED);
    let got: FluxStatus[] = [];
    before(() => {
      got = evaluate(entries.map(([path]) => asV2(readObject(join(CUSTOMIZATIONS_DIR, path)))));
    });
    entries.forEach(([path, want], i) => {
      it(`${path}: ${want}`, () => expect(got[i]).to.equal(want));
    });
  });

  // A new terminal reason must reach the `failed` lists: reason-classes.ts decides.
  it('report Failed exactly for the terminal reasons', () => {
    const terminal: Record<string, readonly string[]> = { StorageBucket: BUCKET_TERMINAL_REASONS, BucketProviderConfig: CONFIG_TERMINAL_REASONS };
    const reasons: string[] = [...Object.values(Reason), IN_USE_REASON];
    const kinds = Object.keys(terminal);
    const objects = kinds.flatMap((kind) =>
      reasons.map((reason) => ({
        apiVersion: 'storage.avalonhosting.example/v1',
        kind,
        metadata: { name: 'x', namespace: 'team-a', generation: 3 },
        status: { observedGeneration: 3, conditions: [{ type: 'Ready', status: 'False', reason, message: 'm', observedGeneration: 3 }] },
      })),
    );
    const want = kinds.flatMap((kind) => reasons.map((r) => (terminal[kind]!.includes(r) ? 'Failed' : 'InProgress')));
    expect(evaluate(objects)).to.deep.equal(want);
  });

  it('docs/gitops.md gives exactly these expressions', () => {
    const doc = readFileSync(GITOPS_DOC, 'utf8');
    expect(doc.includes(fluxKustomization()), 'docs/gitops.md is stale; run npm run gitops:docs').to.equal(true);
    const ks = parse(fluxKustomization()) as { spec: { healthCheckExprs: unknown[] } };
    expect(ks.spec.healthCheckExprs).to.deep.equal(exprs);
  });
});
