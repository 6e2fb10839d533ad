import { expect } from 'chai';
import type { V1Secret } from '@kubernetes/client-node';
import type { BucketProviderConfig, StorageBucket } from '../../../operator/api/v1';
import { connect, ConnectError, endpointProblem, judgeCredentials } from '../../../operator/bucket/connect';
import { Reason } from '../../../operator/bucket/reasons';
import { ProviderClients } from '../../../operator/provider-client';
import { IndexedCache } from '../../../operator/runtime/cache';
import { bucket, credentialSecrets, credentialsSecret, providerConfig } from '../../support/fixtures';

const API_KEY = 'secret-api-key-42';

/** connect() against caches filled by hand; no provider call is made. */
function deps(config: BucketProviderConfig | undefined, opts: { allowLinkLocal?: boolean; secrets?: V1Secret[] } = {}) {
  const configs = new IndexedCache<BucketProviderConfig>();
  if (config) configs.upsert(config);
  const secrets = credentialSecrets(opts.secrets ?? [credentialsSecret({ apiKey: API_KEY })]);
  return { configs, secrets, clients: new ProviderClients({ allowLinkLocalEndpoints: opts.allowLinkLocal }) };
}

describe('connect', () => {
  const http = { endpoint: 'http://127.0.0.1:8090' };
  const cases: Record<
    string,
    {
      args: { config?: BucketProviderConfig; bucket: StorageBucket; allowLinkLocal?: boolean; secrets?: V1Secret[] };
      want: { reason?: Reason; message?: RegExp; endpoint?: string; lookups?: number };
    }
  > = {
    'https config in use, labelled Secret: connects from the cache, no GET': {
      args: { config: providerConfig().inUse().build(), bucket: bucket().build() },
      want: { endpoint: 'https://storage.example.com', lookups: 0 },
    },
    // The hole of issue 16: any Secret of the namespace was sent as a bearer token.
    'Secret without the credentials label: SecretNotLabeled with the command, one GET': {
      args: {
        config: providerConfig().inUse().build(),
        bucket: bucket().build(),
        secrets: [credentialsSecret({ apiKey: API_KEY, labelled: false })],
      },
      want: {
        reason: Reason.SecretNotLabeled,
        message:
          /^Secret ns1\/key is not labelled as provider credentials; to use it run: kubectl label secret -n ns1 key storage\.avalonhosting\.example\/secret-type=provider-credentials$/,
        lookups: 1,
      },
    },
    'Secret labelled with another value: SecretNotLabeled': {
      args: {
        config: providerConfig().inUse().build(),
        bucket: bucket().build(),
        secrets: [
          {
            ...credentialsSecret({ apiKey: API_KEY }),
            metadata: { name: 'key', namespace: 'ns1', labels: { 'storage.avalonhosting.example/secret-type': 'other' } },
          },
        ],
      },
      want: { reason: Reason.SecretNotLabeled },
    },
    'unlabelled Secret of a config being deleted: not used to deprovision either': {
      args: {
        config: providerConfig().inUse().deleting().build(),
        bucket: bucket().prepared().deleting().build(),
        secrets: [credentialsSecret({ apiKey: API_KEY, labelled: false })],
      },
      want: { reason: Reason.SecretNotLabeled },
    },
    'no Secret at all: SecretNotFound after one GET': {
      args: { config: providerConfig().inUse().build(), bucket: bucket().build(), secrets: [] },
      want: { reason: Reason.SecretNotFound, message: /^Secret ns1\/key not found$/, lookups: 1 },
    },
    'labelled Secret without the key: SecretNotFound naming the key': {
      args: { config: providerConfig().inUse().build(), bucket: bucket().build(), secrets: [credentialsSecret({ key: 'other' })] },
      want: { reason: Reason.SecretNotFound, message: /key apiKey missing in Secret ns1\/key/ },
    },
    'http config with insecure true: connects': {
      args: {
        config: providerConfig()
          .withSpec({ ...http, insecure: true })
          .inUse()
          .build(),
        bucket: bucket().build(),
      },
      want: { endpoint: http.endpoint },
    },
    'http config stored before the CEL rule (no insecure): refused naming the field': {
      args: { config: providerConfig().withSpec(http).inUse().build(), bucket: bucket().build() },
      want: { reason: Reason.InvalidProviderConfig, message: /ns1\/default: spec\.endpoint is not https:\/\/ and spec\.insecure is not true/ },
    },
    'http config with insecure false: refused, also to deprovision': {
      args: {
        config: providerConfig()
          .withSpec({ ...http, insecure: false })
          .inUse()
          .build(),
        bucket: bucket().prepared().deleting().build(),
      },
      want: { reason: Reason.InvalidProviderConfig, message: /spec\.insecure/ },
    },
    'metadata address: refused, naming the flag': {
      args: { config: providerConfig().withSpec({ endpoint: 'http://169.254.169.254', insecure: true }).inUse().build(), bucket: bucket().build() },
      want: {
        reason: Reason.InvalidProviderConfig,
        message: /169\.254\.169\.254 is a cloud metadata address: refused \(--allow-link-local-endpoints allows it\)/,
      },
    },
    'metadata host name over https: refused': {
      args: { config: providerConfig().withSpec({ endpoint: 'https://metadata.google.internal' }).inUse().build(), bucket: bucket().build() },
      want: { reason: Reason.InvalidProviderConfig, message: /metadata\.google\.internal is a cloud metadata service/ },
    },
    'IPv6 link-local: refused': {
      args: { config: providerConfig().withSpec({ endpoint: 'https://[fe80::1]:8443' }).inUse().build(), bucket: bucket().build() },
      want: { reason: Reason.InvalidProviderConfig, message: /fe80::1 is a link-local address/ },
    },
    'link-local allowed by the flag: connects': {
      args: {
        config: providerConfig().withSpec({ endpoint: 'https://169.254.10.1' }).inUse().build(),
        bucket: bucket().build(),
        allowLinkLocal: true,
      },
      want: { endpoint: 'https://169.254.10.1' },
    },
    'invalid URL: refused': {
      args: { config: providerConfig().withSpec({ endpoint: 'https://[bad' }).inUse().build(), bucket: bucket().build() },
      want: { reason: Reason.InvalidProviderConfig, message: /endpoint is not a valid URL/ },
    },
    // What may still be done through a config being deleted is decide()'s (plan.ts) to say:
    // buckets it manages keep working, nothing new starts.
    'config being deleted, bucket not: connects (plan refuses new work)': {
      args: { config: providerConfig().inUse().deleting().build(), bucket: bucket().build() },
      want: { endpoint: 'https://storage.example.com' },
    },
    'config being deleted, held only by a foreign finalizer: connects, not NotReady': {
      args: { config: providerConfig().deleting().build(), bucket: bucket().build() },
      want: { endpoint: 'https://storage.example.com' },
    },
    'config being deleted, bucket being deleted: connects to deprovision': {
      args: { config: providerConfig().inUse().deleting().build(), bucket: bucket().prepared().deleting().build() },
      want: { endpoint: 'https://storage.example.com' },
    },
    'config without the in-use finalizer yet: ProviderConfigNotReady': {
      args: { config: providerConfig().build(), bucket: bucket().build() },
      want: { reason: Reason.ProviderConfigNotReady },
    },
    'no config: ProviderConfigNotFound': {
      args: { bucket: bucket().build() },
      want: { reason: Reason.ProviderConfigNotFound },
    },
  };

  for (const [name, tc] of Object.entries(cases)) {
    it(name, async () => {
      const d = deps(tc.args.config, { allowLinkLocal: tc.args.allowLinkLocal, secrets: tc.args.secrets });
      try {
        const outcome = await connect(d, tc.args.bucket).then(
          (c) => c,
          (err: unknown) => err,
        );
        if (tc.want.lookups !== undefined) expect(d.secrets.lookups).to.have.length(tc.want.lookups);
        if (tc.want.reason === undefined) {
          expect(outcome).to.not.be.instanceOf(Error);
          expect((outcome as { endpoint: string }).endpoint).to.equal(tc.want.endpoint);
          return;
        }
        expect(outcome).to.be.instanceOf(ConnectError);
        const err = outcome as ConnectError;
        expect(err.reason).to.equal(tc.want.reason);
        if (tc.want.message) expect(err.message).to.match(tc.want.message);
        expect(err.message).to.not.include(API_KEY);
      } finally {
        d.clients.close();
      }
    });
  }
});

describe('judgeCredentials', () => {
  const ref = { namespace: 'team-a', name: 'provider-credentials', key: 'apiKey' };
  const cases: Record<string, { args: { secret: V1Secret | undefined }; want: { ok: boolean; reason?: Reason; message?: string } }> = {
    labelled: { args: { secret: credentialsSecret({ ...ref, apiKey: ' k ' }) }, want: { ok: true } },
    absent: {
      args: { secret: undefined },
      want: { ok: false, reason: Reason.SecretNotFound, message: 'Secret team-a/provider-credentials not found' },
    },
    'not labelled: the exact command': {
      args: { secret: credentialsSecret({ ...ref, labelled: false }) },
      want: {
        ok: false,
        reason: Reason.SecretNotLabeled,
        message:
          'Secret team-a/provider-credentials is not labelled as provider credentials; to use it run: kubectl label secret -n team-a provider-credentials storage.avalonhosting.example/secret-type=provider-credentials',
      },
    },
    // The label is checked first: an unlabelled Secret's data is never looked at.
    'not labelled and without the key: still SecretNotLabeled': {
      args: { secret: credentialsSecret({ ...ref, key: 'other', labelled: false }) },
      want: { ok: false, reason: Reason.SecretNotLabeled },
    },
    'labelled, blank key': {
      args: { secret: credentialsSecret({ ...ref, apiKey: '  ' }) },
      want: { ok: false, reason: Reason.SecretNotFound, message: 'key apiKey in Secret team-a/provider-credentials is empty' },
    },
  };
  for (const [name, tc] of Object.entries(cases)) {
    it(name, () => {
      const got = judgeCredentials(ref, tc.args.secret);
      expect(got.ok).to.equal(tc.want.ok);
      if (got.ok) expect(got.apiKey).to.equal('k');
      else {
        expect(got.reason).to.equal(tc.want.reason);
        if (tc.want.message) expect(got.message).to.equal(tc.want.message);
      }
    });
  }
});

describe('endpointProblem', () => {
  const cases: Record<string, { args: { endpoint: string; insecure?: boolean; allowLinkLocal?: boolean }; want: RegExp | undefined }> = {
    https: { args: { endpoint: 'https://storage.example.com' }, want: undefined },
    'http without insecure': { args: { endpoint: 'http://storage.example.com' }, want: /spec\.insecure is not true/ },
    'http with insecure': { args: { endpoint: 'http://storage.example.com', insecure: true }, want: undefined },
    'insecure does not allow the metadata service': { args: { endpoint: 'http://169.254.169.254', insecure: true }, want: /cloud metadata/ },
    'the flag allows link-local': { args: { endpoint: 'http://169.254.169.254', insecure: true, allowLinkLocal: true }, want: undefined },
  };
  for (const [name, tc] of Object.entries(cases)) {
    it(name, () => {
      const got = endpointProblem({ endpoint: tc.args.endpoint, insecure: tc.args.insecure }, { allowLinkLocal: tc.args.allowLinkLocal ?? false });
      if (tc.want === undefined) expect(got).to.equal(undefined);
      else expect(got).to.match(tc.want);
    });
  }
});

describe('connect, reused', () => {
  it('gives the same connection while the config and Secret objects are the same, a new one when either is replaced', async () => {
    const config = providerConfig().inUse().build();
    const d = deps(config);
    try {
      const first = await connect(d, bucket().build());
      expect(await connect(d, bucket().build())).to.equal(first);
      // The key rotated: the watch puts a new Secret object in the cache.
      (d.secrets.cache as IndexedCache<V1Secret>).upsert(credentialsSecret({ apiKey: 'rotated-key' }));
      const rotated = await connect(d, bucket().build());
      expect(rotated).to.not.equal(first);
      expect(rotated.account).to.not.equal(first.account);
      // The endpoint changed: a new config object.
      const moved = providerConfig().inUse().build();
      moved.spec = { ...moved.spec, endpoint: 'https://elsewhere.example.com' };
      d.configs.upsert(moved);
      const elsewhere = await connect(d, bucket().build());
      expect(elsewhere.endpoint).to.equal('https://elsewhere.example.com');
      // A config that turned bad is refused, not answered from before.
      d.configs.upsert({ ...moved, spec: { ...moved.spec, endpoint: 'http://plain.example.com' } });
      const refused = await connect(d, bucket().build()).catch((err: unknown) => err);
      expect(refused).to.be.instanceOf(ConnectError);
    } finally {
      d.clients.close();
    }
  });
});
