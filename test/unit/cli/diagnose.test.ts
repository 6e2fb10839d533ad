import { expect } from 'chai';
import { diagnose, exitCodeOf, whyParagraph } from '../../../cli/diagnose';
import { ExitCode } from '../../../cli/exit-codes';
import type { Snapshot } from '../../../cli/snapshot';
import { ownedFacts } from '../../../cli/snapshot';
import { buildTree, nodes } from '../../../cli/trace';
import { API_KEY, configWith, credentialSecret, pausedBucket, readyBucket, snapshot, waitingBucket } from './fixtures';

const LABEL = 'kubectl label secret -n team-a provider-key storage.avalonhosting.example/secret-type=provider-credentials';

interface Want {
  /** kind/name of the root cause. */
  cause: string;
  reason: string;
  class: 'ready' | 'progressing' | 'terminal' | 'paused';
  code: ExitCode;
  fix: string[];
  /** Substrings of the why paragraph. */
  why: string[];
}

const cases: Record<string, { s: Snapshot; want: Want }> = {
  'a Ready bucket is its own cause and exits 0': {
    s: snapshot(),
    want: {
      cause: 'StorageBucket/logs',
      reason: 'Available',
      class: 'ready',
      code: ExitCode.OK,
      fix: [],
      why: ['team-a/logs is Ready: provider bucket bkt-1 is Active (50 GB, eu-west-1)'],
    },
  },
  'a missing credential Secret is named as the root cause, not the bucket or config': {
    s: snapshot({
      bucket: waitingBucket('SecretNotFound', 'Secret team-a/provider-key not found'),
      config: { state: 'found', object: configWith('False', 'SecretNotFound', 'Secret team-a/provider-key not found') },
      secret: undefined,
    }),
    want: {
      cause: 'Secret/provider-key',
      reason: 'SecretNotFound',
      class: 'progressing',
      code: ExitCode.NOT_READY,
      fix: ['kubectl create secret generic provider-key -n team-a --from-literal=apiKey=<API key>', LABEL],
      why: [
        'is not Ready (SecretNotFound)',
        'Root cause: Secret team-a/provider-key (credentials): Secret team-a/provider-key not found.',
        'Not terminal',
        'Fix: kubectl create secret',
      ],
    },
  },
  'a missing Secret is found even before the operator reported it': {
    s: snapshot({ bucket: waitingBucket('Provisioning'), secret: undefined }),
    want: {
      cause: 'Secret/provider-key',
      reason: 'SecretNotFound',
      class: 'progressing',
      code: ExitCode.NOT_READY,
      fix: [`kubectl create secret generic provider-key -n team-a --from-literal=apiKey=<API key>`, LABEL],
      why: [],
    },
  },
  'an unlabelled Secret is terminal and the fix is the label command the operator gives': {
    s: snapshot({
      bucket: waitingBucket('SecretNotLabeled'),
      config: { state: 'found', object: configWith('False', 'SecretNotLabeled', 'not labelled') },
      secret: credentialSecret({ labelled: false }),
    }),
    want: {
      cause: 'Secret/provider-key',
      reason: 'SecretNotLabeled',
      class: 'terminal',
      code: ExitCode.STALLED,
      fix: [LABEL],
      why: ['Terminal: nothing changes until a person acts.', `Fix: ${LABEL}`],
    },
  },
  'a Secret without the key gets a patch command with a placeholder, never a value': {
    s: snapshot({ bucket: waitingBucket('SecretNotFound'), secret: credentialSecret({ data: { other: 'eA==' } }) }),
    want: {
      cause: 'Secret/provider-key',
      reason: 'SecretNotFound',
      class: 'progressing',
      code: ExitCode.NOT_READY,
      fix: [`kubectl patch secret provider-key -n team-a --type=merge -p '{"stringData":{"apiKey":"<API key>"}}'`],
      why: ['key apiKey missing in Secret team-a/provider-key'],
    },
  },
  'a missing config is the cause; no single command fixes it': {
    s: snapshot({ bucket: waitingBucket('ProviderConfigNotFound'), config: { state: 'missing' } }),
    want: {
      cause: 'BucketProviderConfig/default',
      reason: 'NotFound',
      class: 'progressing',
      code: ExitCode.NOT_READY,
      fix: [],
      why: ['To fix it, create BucketProviderConfig default in namespace team-a'],
    },
  },
  'rejected credentials stop at the config, terminal': {
    s: snapshot({
      bucket: waitingBucket('CredentialsRejected'),
      config: { state: 'found', object: configWith('False', 'CredentialsRejected', 'provider answered 401') },
    }),
    want: {
      cause: 'BucketProviderConfig/default',
      reason: 'CredentialsRejected',
      class: 'terminal',
      code: ExitCode.STALLED,
      fix: [],
      why: ['provider answered 401', 'put an API key the provider accepts into key apiKey of Secret team-a/provider-key'],
    },
  },
  'an invalid config endpoint is terminal with an edit command': {
    s: snapshot({
      bucket: waitingBucket('InvalidProviderConfig'),
      config: { state: 'found', object: configWith('False', 'InvalidProviderConfig', 'endpoint is not https') },
    }),
    want: {
      cause: 'BucketProviderConfig/default',
      reason: 'InvalidProviderConfig',
      class: 'terminal',
      code: ExitCode.STALLED,
      fix: ['kubectl edit bucketproviderconfig default -n team-a'],
      why: [],
    },
  },
  'a paused bucket says so and resume is the fix': {
    s: snapshot({ bucket: pausedBucket() }),
    want: {
      cause: 'StorageBucket/logs',
      reason: 'ReconcilePaused',
      class: 'paused',
      code: ExitCode.STALLED,
      fix: ['kubectl bucket resume logs -n team-a'],
      why: ['is paused'],
    },
  },
  'a bucket still provisioning: not terminal, nothing to run': {
    s: snapshot({ bucket: waitingBucket('Provisioning', 'provider bucket bkt-1 is Provisioning', 'True') }),
    want: {
      cause: 'StorageBucket/logs',
      reason: 'Provisioning',
      class: 'progressing',
      code: ExitCode.NOT_READY,
      fix: [],
      why: ['Nothing to do but wait'],
    },
  },
  'an invalid spec is terminal, from the operator reason table': {
    s: snapshot({ bucket: waitingBucket('InvalidSpec', 'spec/sizeGB: Expected integer') }),
    want: {
      cause: 'StorageBucket/logs',
      reason: 'InvalidSpec',
      class: 'terminal',
      code: ExitCode.STALLED,
      fix: ['kubectl edit sbucket logs -n team-a'],
      why: ['spec/sizeGB: Expected integer.'],
    },
  },
  'an unavailable provider: reconcile is offered once it is back': {
    s: snapshot({ bucket: waitingBucket('ProviderUnavailable') }),
    want: {
      cause: 'StorageBucket/logs',
      reason: 'ProviderUnavailable',
      class: 'progressing',
      code: ExitCode.NOT_READY,
      fix: ['kubectl bucket reconcile logs -n team-a'],
      why: [],
    },
  },
  'a Ready bucket whose Secret name is taken by another object': {
    s: snapshot({ accessSecret: ownedFacts('Secret', 'logs-access', readyBucket(), { metadata: { name: 'logs-access' } }) }),
    want: {
      cause: 'Secret/logs-access',
      reason: 'NotControlled',
      class: 'terminal',
      code: ExitCode.STALLED,
      fix: [],
      why: ['is Ready, but Secret team-a/logs-access is not as it should be'],
    },
  },
  'a Ready bucket whose owned Service is gone': {
    s: snapshot({ service: ownedFacts('Service', 'logs', readyBucket(), undefined) }),
    want: {
      cause: 'Service/logs',
      reason: 'NotFound',
      class: 'progressing',
      code: ExitCode.NOT_READY,
      fix: ['kubectl bucket reconcile logs -n team-a'],
      why: [],
    },
  },
};

describe('kubectl bucket: diagnosis (root cause, class, fix, why)', () => {
  for (const [name, { s, want }] of Object.entries(cases)) {
    it(name, () => {
      const d = diagnose(s);
      expect(`${d.cause.kind}/${d.cause.name}`).to.equal(want.cause);
      expect(d.cause.reason).to.equal(want.reason);
      expect(d.class).to.equal(want.class);
      expect(exitCodeOf(d)).to.equal(want.code);
      expect(d.fix).to.deep.equal(want.fix);
      const why = whyParagraph(s, d);
      for (const part of want.why) expect(why).to.include(part);
      expect(why.split('\n')).to.have.length(1);
      expect(why).to.not.include(API_KEY).and.not.include(Buffer.from(API_KEY).toString('base64'));
    });
  }

  it('missing owned objects are expected, not problems, before the bucket is Ready', () => {
    const s = snapshot({
      bucket: waitingBucket('Provisioning'),
      accessSecret: ownedFacts('Secret', 'logs-access', readyBucket(), undefined),
      service: ownedFacts('Service', 'logs', readyBucket(), undefined),
    });
    const owned = nodes(buildTree(s)).filter((n) => n.role === 'accessSecret' || n.role === 'service');
    expect(owned.map((n) => [n.ready, n.reason, n.problem])).to.deep.equal([
      ['-', 'NotCreatedYet', false],
      ['-', 'NotCreatedYet', false],
    ]);
  });

  it('the tree holds the bucket, config with its Secret, owned Secret and Service, provider bucket', () => {
    const tree = buildTree(snapshot());
    expect(nodes(tree).map((n) => `${n.kind}/${n.name}`)).to.deep.equal([
      'StorageBucket/logs',
      'BucketProviderConfig/default',
      'Secret/provider-key',
      'Secret/logs-access',
      'Service/logs',
      'ProviderBucket/bkt-1',
    ]);
    expect(nodes(tree).every((n) => !n.problem)).to.equal(true);
  });

  it('a Ready condition older than the generation is not Ready now', () => {
    const b = readyBucket();
    b.metadata.generation = 2;
    const d = diagnose(snapshot({ bucket: b }));
    expect([d.class, d.cause.reason]).to.deep.equal(['progressing', 'Pending']);
  });
});
