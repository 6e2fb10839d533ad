import { expect } from 'chai';
import { existsSync, readdirSync, readFileSync } from 'node:fs';
import { join, relative } from 'node:path';
import { parse } from 'yaml';
import { BUCKET_TERMINAL_REASONS, CONFIG_TERMINAL_REASONS } from '../../../operator/bucket/reason-classes';
import { Reason } from '../../../operator/bucket/reasons';
import { IN_USE_REASON } from '../../../operator/bucket/config-reconciler';
import { CUSTOMIZATIONS_DIR, REPO_ROOT, customizations, healthTests, readObject, runHealthLua, type Customization } from '../../support/gitops';
import { GITOPS_DOC, argocdConfigMap, renderGitopsDoc } from '../../support/gitops-docs';
import { asV2 } from '../../support/as-v2';

const GROUP = 'storage.avalonhosting.example';
const found = customizations();

/** A minimal object whose Ready condition is False with `reason`, at the current generation. */
function withReadyReason(kind: string, reason: string) {
  return {
    apiVersion: `${GROUP}/v1`,
    kind,
    metadata: { name: 'x', namespace: 'team-a', generation: 3 },
    status: {
      observedGeneration: 3,
      conditions: [
        { type: 'Ready', status: 'False', reason, message: 'something', observedGeneration: 3, lastTransitionTime: '2026-12-01T09:00:00Z' },
      ],
    },
  };
}

/** The argocd-cm `data` key Argo CD reads a health check of `c` from. */
function configMapKey(c: Customization): string {
  return `resource.customizations.health.${c.group}_${c.kind}`;
}

describe('Argo CD health checks (health.lua on Debian lua5.1)', () => {
  it("exist for both kinds in Argo CD's resource_customizations layout", () => {
    expect(found.map((c) => `${c.group}/${c.kind}`)).to.deep.equal([`${GROUP}/BucketProviderConfig`, `${GROUP}/StorageBucket`]);
  });

  for (const c of found) {
    describe(`${c.group}/${c.kind}`, () => {
      const tests = healthTests(c);
      const lua = join(c.dir, 'health.lua');

      for (const t of tests) {
        it(`${t.inputPath}: ${t.healthStatus.status}`, () => {
          expect(runHealthLua(lua, readObject(join(c.dir, t.inputPath)))).to.deep.equal(t.healthStatus);
        });
      }

      // Argo CD picks health checks by group and kind: the same script judges v2 objects.
      for (const t of tests) {
        it(`${t.inputPath} converted to v2: ${t.healthStatus.status}`, () => {
          expect(runHealthLua(lua, asV2(readObject(join(c.dir, t.inputPath))))).to.deep.equal(t.healthStatus);
        });
      }

      it('has a test for every testdata file', () => {
        const files = readdirSync(join(c.dir, 'testdata'))
          .map((f) => `testdata/${f}`)
          .sort();
        expect(tests.map((t) => t.inputPath).sort()).to.deep.equal(files);
      });

      // Adding a Reason forces a class in reason-classes.ts; this forces health.lua to agree.
      const terminal: readonly string[] = c.kind === 'StorageBucket' ? BUCKET_TERMINAL_REASONS : CONFIG_TERMINAL_REASONS;
      for (const reason of [...Object.values(Reason), IN_USE_REASON]) {
        const want = terminal.includes(reason) ? 'Degraded' : 'Progressing';
        it(`Ready=False with ${reason} is ${want}`, () => {
          expect(runHealthLua(lua, withReadyReason(c.kind, reason))).to.deep.equal({ status: want, message: `${reason}: something` });
        });
      }
    });
  }

  describe('argocd-cm snippets carry health.lua unchanged', () => {
    it('gitops/argocd/argocd-cm.yaml holds every health.lua under its argocd-cm key', () => {
      const text = readFileSync(join(REPO_ROOT, 'gitops', 'argocd', 'argocd-cm.yaml'), 'utf8');
      const cm = parse(text) as { kind: string; metadata: { name: string }; data: Record<string, string> };
      expect(cm.metadata.name).to.equal('argocd-cm');
      expect(Object.keys(cm.data).sort()).to.deep.equal(found.map(configMapKey).sort());
      for (const c of found) expect(cm.data[configMapKey(c)], configMapKey(c)).to.equal(c.script);
      expect(text.endsWith(argocdConfigMap()), 'argocd-cm.yaml is stale; run npm run gitops:docs').to.equal(true);
    });

    it('docs/gitops.md shows the same snippets', () => {
      const doc = readFileSync(GITOPS_DOC, 'utf8');
      expect(doc === renderGitopsDoc(doc), 'docs/gitops.md is stale; run npm run gitops:docs').to.equal(true);
    });
  });

  it('keeps testdata free of managedFields', () => {
    for (const c of found) {
      for (const f of readdirSync(join(c.dir, 'testdata'))) {
        const path = join(c.dir, 'testdata', f);
        const obj = readObject(path) as { metadata?: Record<string, unknown> };
        expect(obj.metadata?.['managedFields'], relative(CUSTOMIZATIONS_DIR, path)).to.equal(undefined);
      }
    }
    expect(existsSync(CUSTOMIZATIONS_DIR)).to.equal(true);
  });
});
