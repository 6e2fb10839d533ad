import { expect } from 'chai';
import { X509Certificate } from 'node:crypto';
import { pino } from 'pino';
import { serviceDnsNames } from '../../../operator/conversion/certificates';
import { CertificateKeeper, type CertStore, type CrdConversion } from '../../../operator/conversion/keeper';
import type { CertPolicy } from '../../../operator/conversion/rotation';
import { CertSecretKey, type CertData } from '../../../operator/conversion/secret-certs';

const H = 3_600_000;
const DAY = 24 * H;
const START = Date.parse('2026-12-02T00:00:00Z');
const policy: CertPolicy = { caValidityMs: 30 * DAY, servingValidityMs: 9 * DAY, renewFraction: 2 / 3, overlapMs: H };
const names = { commonName: 'webhook', dnsNames: serviceDnsNames('webhook', 'ns'), ipAddresses: ['127.0.0.1'] };
/** A clientConfig naming this webhook's Service. */
const OURS = { service: { namespace: 'ns', name: 'webhook' } };

/** An in-memory cluster: one Secret, CRDs by name, and every write recorded. */
function fakeStore(crds: CrdConversion[]) {
  const state = { secret: undefined as { data: CertData; resourceVersion: string } | undefined, crds: new Map(crds.map((c) => [c.name, c])) };
  const writes: string[] = [];
  let failCaBundle = false;
  const store: CertStore = {
    read: async () => state.secret,
    write: async (data, rv) => {
      if (rv !== state.secret?.resourceVersion) throw new Error('conflict');
      state.secret = { data, resourceVersion: String(Number(rv ?? 0) + 1) };
      writes.push('secret');
    },
    crds: async () => [...state.crds.values()],
    setCaBundle: async (name, caBundle) => {
      if (failCaBundle) throw new Error('forbidden: cannot patch customresourcedefinitions');
      const crd = state.crds.get(name);
      if (crd) state.crds.set(name, { ...crd, caBundle });
      writes.push(`caBundle ${name}`);
    },
  };
  return { store, state, writes, failCaBundles: (on: boolean) => (failCaBundle = on) };
}

const caCount = (pem: string | undefined) => (pem?.match(/BEGIN CERTIFICATE/g) ?? []).length;

describe('conversion certificate keeper', () => {
  let now = START;
  let logs = '';
  const logger = pino({ level: 'debug' }, { write: (line: string) => (logs += line) });
  beforeEach(() => {
    now = START;
    logs = '';
  });
  const keeper = (store: CertStore) => new CertificateKeeper({ store, policy, names, logger, now: () => now });

  it('a fresh cluster: makes the Secret and puts its CA into the CRDs that convert by webhook, and no other', async () => {
    const fake = fakeStore([
      { name: 'storagebuckets.g', webhook: true, target: OURS, caBundle: undefined },
      { name: 'bucketproviderconfigs.g', webhook: true, target: OURS, caBundle: 'stale' },
      { name: 'other.g', webhook: false, caBundle: undefined },
    ]);
    const k = keeper(fake.store);
    expect(await k.reconcile()).to.equal(now);
    expect(fake.writes).to.deep.equal(['secret', 'caBundle storagebuckets.g', 'caBundle bucketproviderconfigs.g']);
    const bundle = fake.state.secret?.data[CertSecretKey.caBundle];
    expect(caCount(bundle)).to.equal(1);
    expect(fake.state.crds.get('storagebuckets.g')?.caBundle).to.equal(bundle);
    expect(fake.state.crds.get('other.g')?.caBundle).to.equal(undefined);
    // The next pass changes nothing and names when to look again: the serving renewal at 2/3 of 9 days.
    fake.writes.length = 0;
    expect(await k.reconcile()).to.equal(START + 6 * DAY);
    expect(fake.writes).to.deep.equal([]);
  });

  it("never puts its CA into a CRD converted by another install's webhook, and says so once", async () => {
    const fake = fakeStore([
      { name: 'service-elsewhere.g', webhook: true, target: { service: { namespace: 'team-b-operator', name: 'webhook' } }, caBundle: 'theirs' },
      { name: 'other-service.g', webhook: true, target: { service: { namespace: 'ns', name: 'another-webhook' } }, caBundle: undefined },
      { name: 'url-elsewhere.g', webhook: true, target: { url: 'https://10.0.0.9:9443/convert' }, caBundle: undefined },
      { name: 'no-target.g', webhook: true, caBundle: undefined },
      { name: 'url-ours.g', webhook: true, target: { url: 'https://127.0.0.1:9443/convert' }, caBundle: undefined },
      { name: 'service-ours.g', webhook: true, target: OURS, caBundle: undefined },
    ]);
    const k = keeper(fake.store);
    await k.reconcile();
    await k.reconcile();
    const bundle = fake.state.secret?.data[CertSecretKey.caBundle];
    expect(fake.writes.filter((w) => w.startsWith('caBundle'))).to.deep.equal(['caBundle url-ours.g', 'caBundle service-ours.g']);
    expect(fake.state.crds.get('service-elsewhere.g')?.caBundle).to.equal('theirs');
    expect(fake.state.crds.get('service-ours.g')?.caBundle).to.equal(bundle);
    expect(logs.match(/is not this operator's/g) ?? []).to.have.length(4);
  });

  it('puts back a caBundle someone else changed, without touching the Secret', async () => {
    const fake = fakeStore([{ name: 'storagebuckets.g', webhook: true, target: OURS, caBundle: undefined }]);
    const k = keeper(fake.store);
    await k.reconcile();
    fake.state.crds.set('storagebuckets.g', { name: 'storagebuckets.g', webhook: true, target: OURS, caBundle: undefined });
    fake.writes.length = 0;
    await k.reconcile();
    expect(fake.writes).to.deep.equal(['caBundle storagebuckets.g']);
  });

  it('a CA rotation: the CRDs trust the new CA in the same pass that adds it, before any certificate from it is served', async () => {
    const fake = fakeStore([{ name: 'storagebuckets.g', webhook: true, target: OURS, caBundle: undefined }]);
    const k = keeper(fake.store);
    await k.reconcile();
    // Passes when the planner asked for them: serving renewals at days 6, 12 and 18.
    for (const day of [6, 12, 18]) {
      now = START + day * DAY;
      while ((await k.reconcile()) === now);
    }
    const servingBefore = fake.state.secret?.data[CertSecretKey.cert];
    now = START + 20 * DAY; // the CA is due (2/3 of 30 days)
    while ((await k.reconcile()) === now);
    const data = fake.state.secret?.data ?? {};
    expect(caCount(data[CertSecretKey.caBundle])).to.equal(2);
    expect(fake.state.crds.get('storagebuckets.g')?.caBundle).to.equal(data[CertSecretKey.caBundle]);
    const serving = new X509Certificate(data[CertSecretKey.cert] ?? '');
    // Still the certificate from the old CA (the first in the bundle) until the overlap is over.
    expect(data[CertSecretKey.cert]).to.equal(servingBefore);
    const [oldCa] = (data[CertSecretKey.caBundle] ?? '').match(/-----BEGIN CERTIFICATE-----[\s\S]*?-----END CERTIFICATE-----\n/g) ?? [];
    expect(serving.checkIssued(new X509Certificate(oldCa ?? ''))).to.equal(true);
  });

  it('does not move a rotation on while the caBundle cannot be written', async () => {
    const fake = fakeStore([{ name: 'storagebuckets.g', webhook: true, target: OURS, caBundle: undefined }]);
    const k = keeper(fake.store);
    await k.reconcile();
    now = START + 20 * DAY;
    while ((await k.reconcile()) === now);
    const rv = fake.state.secret?.resourceVersion;
    // The CRD was re-applied without the caBundle, and patching it is forbidden: no switch to the new CA.
    fake.state.crds.set('storagebuckets.g', { name: 'storagebuckets.g', webhook: true, target: OURS, caBundle: undefined });
    fake.failCaBundles(true);
    now += 2 * H;
    let err: unknown;
    await k.reconcile().catch((e: unknown) => (err = e));
    expect(String(err)).to.match(/forbidden/);
    expect(fake.state.secret?.resourceVersion).to.equal(rv);
  });

  it('never logs a private key', async () => {
    const fake = fakeStore([{ name: 'storagebuckets.g', webhook: true, target: OURS, caBundle: undefined }]);
    const k = keeper(fake.store);
    for (const at of [START, START + 7 * DAY, START + 20 * DAY, START + 20 * DAY + 2 * H, START + 20 * DAY + 4 * H]) {
      now = at;
      while ((await k.reconcile()) === now);
    }
    expect(logs).to.match(/Rotated conversion webhook certificates/);
    expect(logs).to.include('"step":"dropOldCas"');
    expect(logs).to.not.match(/PRIVATE KEY|BEGIN CERTIFICATE/);
  });

  it('the loop retries a failed pass and stops on abort', async () => {
    const fake = fakeStore([{ name: 'storagebuckets.g', webhook: true, target: OURS, caBundle: undefined }]);
    let reads = 0;
    const flaky: CertStore = {
      ...fake.store,
      read: async () => {
        if (reads++ === 0) throw new Error('connection refused');
        return fake.store.read();
      },
    };
    const k = new CertificateKeeper({ store: flaky, policy, names, logger, retryMs: 10, resyncMs: 10 });
    const abort = new AbortController();
    const running = k.start(abort.signal);
    for (let i = 0; i < 100 && !fake.state.secret; i++) await new Promise((r) => setTimeout(r, 10));
    abort.abort();
    await running;
    expect(fake.state.secret).to.not.equal(undefined);
    expect(logs).to.match(/"message":"connection refused".*"msg":"Cannot update conversion webhook certificates"/);
  });
});
