import { expect } from 'chai';
import { X509Certificate } from 'node:crypto';
import { pino } from 'pino';
import { CertificateKeeper, type CertStore, type CrdConversion, type StoredCerts } from '../../../operator/conversion/keeper';
import type { CertPolicy } from '../../../operator/conversion/rotation';
import { issueCa, serviceDnsNames } from '../../../operator/conversion/certificates';
import { CertSecretKey, type CertData } from '../../../operator/conversion/secret-certs';

const H = 3_600_000;
const DAY = 24 * H;
const START = Date.parse('2026-12-02T00:00:00Z');
const policy: CertPolicy = { caValidityMs: 30 * DAY, servingValidityMs: 9 * DAY, renewFraction: 2 / 3, overlapMs: H };
const names = { commonName: 'webhook', dnsNames: serviceDnsNames('webhook', 'ns'), ipAddresses: ['127.0.0.1'] };
/** A clientConfig naming this webhook's Service. */
const OURS = { service: { namespace: 'ns', name: 'webhook' } };

/** One certificate of a PEM bundle per entry. */
const pems = (bundle: string | undefined): string[] => bundle?.match(/-----BEGIN CERTIFICATE-----[\s\S]*?-----END CERTIFICATE-----\n?/g) ?? [];

/** `data`'s serving certificate verifies against a CA of `bundle`: what the API server checks. */
function servingTrusted(data: CertData, bundle: string | undefined): boolean {
  const cert = data[CertSecretKey.cert];
  if (!cert) return true;
  const serving = new X509Certificate(cert);
  return pems(bundle).some((pem) => {
    const ca = new X509Certificate(pem);
    return serving.checkIssued(ca) && serving.verify(ca.publicKey);
  });
}

/**
 * An in-memory cluster: one Secret, CRDs by name, every write recorded, writes conditional on
 * resourceVersions as the API server makes them. At every Secret write it notes whether each
 * CRD converting through this webhook already trusted the serving certificate written: a
 * replica may load it at once.
 */
function fakeStore(crds: CrdConversion[]) {
  const state = {
    secret: undefined as StoredCerts | undefined,
    crds: new Map<string, CrdConversion>(crds.map((c) => [c.name, { ...c, resourceVersion: '1' }])),
  };
  const writes: string[] = [];
  /** Every caBundle set, in order. */
  const bundles: string[] = [];
  const untrustedWrites: string[] = [];
  let failCaBundle = false;
  let createLoses = false;
  const checkTrust = (data: CertData) => {
    for (const crd of state.crds.values()) {
      if (crd.target === OURS && !servingTrusted(data, crd.caBundle)) untrustedWrites.push(crd.name);
    }
  };
  const store: CertStore = {
    read: async () => state.secret,
    create: async (data) => {
      if (state.secret || createLoses) return false;
      checkTrust(data);
      state.secret = { data, resourceVersion: '1' };
      writes.push('secret');
      return true;
    },
    replace: async (data, previous) => {
      if (previous.resourceVersion !== state.secret?.resourceVersion) throw new Error('conflict');
      checkTrust(data);
      state.secret = { ...previous, data: { ...previous.data, ...data }, resourceVersion: String(Number(previous.resourceVersion) + 1) };
      writes.push('secret');
    },
    crds: async () => [...state.crds.values()],
    setCaBundle: async (name, caBundle, resourceVersion) => {
      if (failCaBundle) throw new Error('forbidden: cannot patch customresourcedefinitions');
      const crd = state.crds.get(name);
      if (!crd) return;
      if (resourceVersion !== undefined && resourceVersion !== crd.resourceVersion) throw new Error('conflict');
      state.crds.set(name, { ...crd, caBundle, resourceVersion: String(Number(crd.resourceVersion ?? 0) + 1) });
      writes.push(`caBundle ${name}`);
      bundles.push(caBundle);
    },
  };
  return {
    store,
    state,
    writes,
    bundles,
    untrustedWrites,
    failCaBundles: (on: boolean) => (failCaBundle = on),
    /** Every create fails as when another replica made the Secret first (without it appearing here). */
    loseCreates: (on: boolean) => (createLoses = on),
  };
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

  it('a fresh cluster: puts a new CA into the CRDs that convert by webhook, and no other, before it writes the Secret that serves from it', async () => {
    const fake = fakeStore([
      { name: 'storagebuckets.g', webhook: true, target: OURS, caBundle: undefined },
      { name: 'bucketproviderconfigs.g', webhook: true, target: OURS, caBundle: 'stale' },
      { name: 'other.g', webhook: false, caBundle: undefined },
    ]);
    const k = keeper(fake.store);
    expect(await k.reconcile()).to.equal(now);
    expect(fake.writes).to.deep.equal(['caBundle storagebuckets.g', 'caBundle bucketproviderconfigs.g', 'secret']);
    expect(fake.untrustedWrites).to.deep.equal([]);
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

  it('replaces an unusable Secret only once the CRDs trust the new CA, and keeps trusting the CAs it held for an overlap', async () => {
    const fake = fakeStore([{ name: 'storagebuckets.g', webhook: true, target: OURS, caBundle: undefined }]);
    const k = keeper(fake.store);
    await k.reconcile();
    const before = fake.state.secret;
    if (!before) throw new Error('no Secret');
    const oldCa = pems(before.data[CertSecretKey.caBundle])[0];
    // ca.key replaced by a key of no CA in the bundle: the planner starts afresh ('create').
    const stranger = issueCa({ commonName: 'x', notBefore: new Date(START - H), notAfter: new Date(START + DAY) });
    fake.state.secret = { ...before, data: { ...before.data, [CertSecretKey.caKey]: stranger.privateKey }, resourceVersion: '7' };
    fake.writes.length = 0;
    now = START + H;
    while ((await k.reconcile()) === now);
    expect(fake.writes.slice(0, 2)).to.deep.equal(['caBundle storagebuckets.g', 'secret']);
    expect(fake.untrustedWrites).to.deep.equal([]);
    // The old CA stays trusted beside the new one: a replica may still serve the old certificate.
    const held = pems(fake.state.crds.get('storagebuckets.g')?.caBundle);
    expect(held).to.have.length(2);
    expect(held[0]).to.equal(oldCa);
    expect(fake.state.crds.get('storagebuckets.g')?.caBundle).to.equal(fake.state.secret?.data[CertSecretKey.caBundle]);
    // ... and leaves after an overlap, as in a rotation.
    now += 2 * H;
    while ((await k.reconcile()) === now);
    expect(pems(fake.state.crds.get('storagebuckets.g')?.caBundle)).to.have.length(1);
    expect(fake.untrustedWrites).to.deep.equal([]);
  });

  it('never puts a bundle that holds no certificate into a CRD', async () => {
    const fake = fakeStore([{ name: 'storagebuckets.g', webhook: true, target: OURS, caBundle: undefined }]);
    fake.state.secret = { data: { [CertSecretKey.caBundle]: 'garbage' }, resourceVersion: '3' };
    const k = keeper(fake.store);
    while ((await k.reconcile()) === now);
    expect(fake.bundles).to.not.include('garbage');
    expect(caCount(fake.state.crds.get('storagebuckets.g')?.caBundle)).to.equal(1);
    expect(fake.untrustedWrites).to.deep.equal([]);
  });

  it('any replica makes a missing Secret, its CA added to what the CRDs trust first; one that is there, usable or not, is left to the leader', async () => {
    const earlier = issueCa({ commonName: 'earlier', notBefore: new Date(START - H), notAfter: new Date(START + DAY) }).certificate;
    const fake = fakeStore([
      { name: 'storagebuckets.g', webhook: true, target: OURS, caBundle: earlier },
      { name: 'elsewhere.g', webhook: true, target: { service: { namespace: 'team-b', name: 'webhook' } }, caBundle: undefined },
    ]);
    const k = keeper(fake.store);
    expect(await k.ensureSecret()).to.equal(true);
    expect(fake.writes).to.deep.equal(['caBundle storagebuckets.g', 'secret']);
    expect(fake.untrustedWrites).to.deep.equal([]);
    // What the CRD trusted before stays trusted: a replica may still serve from it.
    const held = pems(fake.state.crds.get('storagebuckets.g')?.caBundle);
    expect(held).to.deep.equal([earlier, ...pems(fake.state.secret?.data[CertSecretKey.caBundle])]);
    expect(fake.state.crds.get('elsewhere.g')?.caBundle).to.equal(undefined);

    fake.writes.length = 0;
    expect(await k.ensureSecret()).to.equal(false);
    fake.state.secret = { data: { [CertSecretKey.caBundle]: 'garbage' }, resourceVersion: '9' };
    expect(await k.ensureSecret()).to.equal(false);
    expect(fake.writes).to.deep.equal([]);
  });

  it("a replica whose create lost uses the winner's Secret, which the CRDs trusted before it was made; the leader then trusts exactly it", async () => {
    const fake = fakeStore([{ name: 'storagebuckets.g', webhook: true, target: OURS, caBundle: undefined }]);
    const loser = keeper(fake.store);
    fake.loseCreates(true);
    expect(await loser.ensureSecret()).to.equal(false);
    // The leader's pass races the same way: no error, it looks again at once.
    expect(await loser.reconcile()).to.equal(now);
    expect(fake.state.secret).to.equal(undefined);
    fake.loseCreates(false);
    const winner = keeper(fake.store);
    expect(await winner.ensureSecret()).to.equal(true);
    expect(fake.untrustedWrites).to.deep.equal([]);
    // Until a leader with the webhook passes, the losers' CAs are trusted too (their keys are gone).
    expect(caCount(fake.state.crds.get('storagebuckets.g')?.caBundle)).to.equal(3);
    while ((await loser.reconcile()) === now);
    expect(fake.state.crds.get('storagebuckets.g')?.caBundle).to.equal(fake.state.secret?.data[CertSecretKey.caBundle]);
    expect(caCount(fake.state.crds.get('storagebuckets.g')?.caBundle)).to.equal(1);
    expect(logs).to.not.match(/Cannot update/);
  });

  it('the bootstrap retries until a Secret exists and stops on abort', async () => {
    const fake = fakeStore([{ name: 'storagebuckets.g', webhook: true, target: OURS, caBundle: undefined }]);
    let reads = 0;
    const flaky: CertStore = {
      ...fake.store,
      read: async () => {
        if (reads++ === 0) throw new Error('connection refused');
        return fake.store.read();
      },
    };
    const k = new CertificateKeeper({ store: flaky, policy, names, logger, retryMs: 10 });
    await k.bootstrap(new AbortController().signal);
    expect(fake.state.secret).to.not.equal(undefined);
    expect(logs).to.match(/"message":"connection refused".*"msg":"Cannot create conversion webhook certificates"/);
    // Aborted before a Secret exists: returns without one.
    const never = fakeStore([]);
    const abort = new AbortController();
    const stuck = new CertificateKeeper({
      store: { ...never.store, read: () => Promise.reject(new Error('down')) },
      policy,
      names,
      logger,
      retryMs: 10,
    });
    const running = stuck.bootstrap(abort.signal);
    abort.abort();
    await running;
    expect(never.state.secret).to.equal(undefined);
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
    expect(fake.untrustedWrites, 'a Secret written before the CRDs trusted its serving certificate').to.deep.equal([]);
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
