import { expect } from 'chai';
import { X509Certificate } from 'node:crypto';
import { serviceDnsNames } from '../../../operator/conversion/certificates';
import { planRotation, type CertPolicy, type RotationStep } from '../../../operator/conversion/rotation';
import {
  applyRotation,
  CertSecretKey,
  readCertFacts,
  servingCredentials,
  type CertData,
  type ServingNames,
} from '../../../operator/conversion/secret-certs';

const MIN = 60_000;
const H = 60 * MIN;
const DAY = 24 * H;
const START = Date.parse('2026-12-02T00:00:00Z');
const names: ServingNames = {
  commonName: 'bucketoperator-webhook',
  dnsNames: serviceDnsNames('bucketoperator-webhook', 'bucketoperator-system'),
  ipAddresses: ['127.0.0.1'],
};
/** Short lifetimes so a few months hold several CA rotations. */
const policy: CertPolicy = { caValidityMs: 30 * DAY, servingValidityMs: 9 * DAY, renewFraction: 2 / 3, overlapMs: H };

/** Plans and applies at `now` until the planner keeps; returns the data and the steps taken. */
function converge(data: CertData | undefined, now: number): { data: CertData; steps: RotationStep['kind'][]; recheckAt: number } {
  const steps: RotationStep['kind'][] = [];
  for (let i = 0; i < 5; i++) {
    const step = planRotation(readCertFacts(data, names), now, policy);
    if (step.kind === 'keep') {
      if (!data) throw new Error('kept nothing');
      return { data, steps, recheckAt: step.recheckAt };
    }
    steps.push(step.kind);
    data = applyRotation(step, data, now, policy, names);
  }
  throw new Error(`no convergence at ${new Date(now).toISOString()}: ${steps.join(', ')}`);
}

function bundle(data: CertData): X509Certificate[] {
  return (data[CertSecretKey.caBundle]?.match(/-----BEGIN CERTIFICATE-----[\s\S]*?-----END CERTIFICATE-----\n/g) ?? []).map(
    (p) => new X509Certificate(p),
  );
}

/** `cert` is valid at `at` and chains to a CA of `cas` that is valid at `at`, as a TLS client with that caBundle checks. */
function trusted(cert: X509Certificate, cas: readonly X509Certificate[], at: number): boolean {
  const valid = (x: X509Certificate) => Date.parse(x.validFrom) <= at && at <= Date.parse(x.validTo);
  return valid(cert) && cas.some((ca) => valid(ca) && cert.checkIssued(ca) && cert.verify(ca.publicKey));
}

describe('webhook certificates in their Secret', () => {
  it('a fresh Secret: CA and serving certificate, then nothing to do', () => {
    const { data, steps } = converge(undefined, START);
    expect(steps).to.deep.equal(['create']);
    expect(Object.keys(data).sort()).to.deep.equal(['ca.crt', 'ca.key', 'tls.crt', 'tls.key']);
    const creds = servingCredentials(data);
    if (!creds) throw new Error('no credentials');
    const cert = new X509Certificate(creds.cert);
    expect(trusted(cert, bundle(data), START)).to.equal(true);
    expect(cert.checkIP('127.0.0.1')).to.equal('127.0.0.1');
    expect(cert.checkHost('bucketoperator-webhook.bucketoperator-system.svc')).to.not.equal(undefined);
  });

  it('serves a Secret another tool keeps, with or without ca.crt, and nothing without a key', () => {
    const { data } = converge(undefined, START);
    const { [CertSecretKey.caBundle]: _ca, [CertSecretKey.caKey]: _caKey, ...servingOnly } = data;
    expect(servingCredentials(servingOnly)).to.deep.equal({ cert: data[CertSecretKey.cert], key: data[CertSecretKey.key] });
    const { [CertSecretKey.key]: _key, ...noKey } = data;
    expect(servingCredentials(noKey)).to.equal(undefined);
  });

  it('over 100 days of rotations, every certificate a replica may still serve is trusted by every caBundle the API server may still hold', () => {
    // A replica (or the API server) may act on what the Secret held up to `lag` ago: less
    // than the overlap, as the policy promises.
    const lag = 45 * MIN;
    const history: { at: number; data: CertData }[] = [];
    let now = START;
    let data: CertData | undefined;
    const rotations: string[] = [];
    while (now < START + 100 * DAY) {
      const result = converge(data, now);
      if (result.steps.length > 0) {
        history.push({ at: now, data: result.data });
        rotations.push(...result.steps);
      }
      data = result.data;
      expect(bundle(data).length, 'CAs in the bundle').to.be.at.most(2);
      // Check just after the change, once the lag has passed, and at the next planned time.
      for (const at of [now, now + lag, result.recheckAt - 1]) {
        const window = history.filter((h, i) => h.at <= at && (history[i + 1]?.at ?? Infinity) >= at - lag);
        for (const served of window) {
          for (const seen of window) {
            const cert = new X509Certificate(served.data[CertSecretKey.cert] ?? '');
            expect(trusted(cert, bundle(seen.data), at), `at ${new Date(at).toISOString()}`).to.equal(true);
          }
        }
      }
      now = Math.min(result.recheckAt, now + 3 * DAY);
    }
    // Several full CA rotations happened, each as add -> switch -> drop.
    const caRotations = rotations.filter((s) => s === 'addCa').length;
    expect(caRotations).to.be.at.least(4);
    expect(rotations.filter((s) => s === 'dropOldCas').length).to.be.at.least(caRotations - 1);
    expect(rotations.filter((s) => s === 'create')).to.have.length(1);
  });

  it('reads broken data as unusable or as a serving certificate to replace, never by quoting a key', () => {
    const { data } = converge(undefined, START);
    const other = converge(undefined, START).data;
    const facts = (d: CertData) => readCertFacts(d, names);
    expect(facts({ [CertSecretKey.caBundle]: 'garbage' })).to.deep.equal({ kind: 'unusable', reason: 'ca.crt holds no certificate' });
    expect(facts({ ...data, [CertSecretKey.caKey]: 'not a key' })).to.deep.equal({
      kind: 'unusable',
      reason: 'ca.key is missing or not a private key',
    });
    const wrongKey = facts({ ...data, [CertSecretKey.key]: other[CertSecretKey.key] ?? '' });
    expect(wrongKey.kind === 'present' && wrongKey.serving?.keyMatches).to.equal(false);
    const foreign = facts({ ...data, [CertSecretKey.cert]: other[CertSecretKey.cert] ?? '' });
    expect(foreign.kind === 'present' && foreign.serving?.issuer).to.equal(-1);
    const renamed = readCertFacts(data, { ...names, dnsNames: serviceDnsNames('renamed', 'bucketoperator-system') });
    expect(renamed.kind === 'present' && renamed.serving?.namesMatch).to.equal(false);
    const noIp = readCertFacts(data, { ...names, ipAddresses: [] });
    expect(noIp.kind === 'present' && noIp.serving?.namesMatch).to.equal(false);
    const keyOfOtherCa = facts({ ...data, [CertSecretKey.caKey]: other[CertSecretKey.caKey] ?? '' });
    expect(planRotation(keyOfOtherCa, START, policy)).to.deep.equal({ kind: 'create', reason: 'no CA in the bundle matches the CA key' });
  });

  it('a Service name of 63 characters (the most a Service may have) still gets a CA and a serving certificate naming it', () => {
    const service = `w${'x'.repeat(61)}k`;
    const long: ServingNames = { commonName: service, dnsNames: serviceDnsNames(service, 'bucketoperator-system') };
    const steps: RotationStep['kind'][] = [];
    let data: CertData | undefined;
    for (const at of [START, START + 20 * DAY, START + 20 * DAY + 2 * H, START + 20 * DAY + 4 * H]) {
      for (
        let step = planRotation(readCertFacts(data, long), at, policy);
        step.kind !== 'keep';
        step = planRotation(readCertFacts(data, long), at, policy)
      ) {
        steps.push(step.kind);
        data = applyRotation(step, data, at, policy, long);
      }
    }
    // A whole CA rotation, not only the first Secret.
    expect(steps).to.deep.equal(['create', 'addCa', 'issueServing', 'dropOldCas']);
    if (!data) throw new Error('no data');
    const cert = new X509Certificate(data[CertSecretKey.cert] ?? '');
    expect(cert.checkHost(`${service}.bucketoperator-system.svc`, { wildcards: false })).to.equal(`${service}.bucketoperator-system.svc`);
    expect(trusted(cert, bundle(data), START + 20 * DAY + 4 * H)).to.equal(true);
    for (const x of [cert, ...bundle(data)]) expect(/CN=(.*)/.exec(x.subject)?.[1]?.length).to.be.within(1, 64);
  });

  it('a fresh start over an unusable Secret keeps the CAs of it that still hold in the bundle, beside the new one', () => {
    const { data } = converge(undefined, START);
    const other = converge(undefined, START).data;
    const unusable = { ...data, [CertSecretKey.caKey]: other[CertSecretKey.caKey] ?? '' };
    const step = planRotation(readCertFacts(unusable, names), START + H, policy);
    expect(step.kind).to.equal('create');
    const fresh = applyRotation(step, unusable, START + H, policy, names);
    const [kept, added] = bundle(fresh);
    expect(kept?.raw.equals(bundle(data)[0]?.raw ?? Buffer.alloc(0))).to.equal(true);
    expect(trusted(new X509Certificate(fresh[CertSecretKey.cert] ?? ''), added ? [added] : [], START + H)).to.equal(true);
    // An expired CA or one that does not parse is not kept.
    expect(bundle(applyRotation(step, unusable, START + 31 * DAY, policy, names))).to.have.length(1);
    expect(
      bundle(
        applyRotation(step, { [CertSecretKey.caBundle]: '-----BEGIN CERTIFICATE-----\nAAAA\n-----END CERTIFICATE-----\n' }, START, policy, names),
      ),
    ).to.have.length(1);
    // The next steps drop the old CA after an overlap, as in a rotation.
    expect(converge(fresh, START + H).steps).to.deep.equal([]);
    expect(converge(fresh, START + 3 * H).steps).to.deep.equal(['dropOldCas']);
  });

  it('a renamed Service gets a serving certificate from the same CA', () => {
    const { data } = converge(undefined, START);
    const renamedNames = { ...names, dnsNames: serviceDnsNames('renamed', 'bucketoperator-system') };
    const step = planRotation(readCertFacts(data, renamedNames), START + H, policy);
    expect(step).to.deep.equal({ kind: 'issueServing', reason: 'the serving certificate names other hosts' });
    const next = applyRotation(step, data, START + H, policy, renamedNames);
    expect(next[CertSecretKey.caBundle]).to.equal(data[CertSecretKey.caBundle]);
    expect(new X509Certificate(next[CertSecretKey.cert] ?? '').checkHost('renamed.bucketoperator-system.svc')).to.not.equal(undefined);
  });
});
