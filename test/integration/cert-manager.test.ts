/**
 * The conversion webhook with its certificates kept by cert-manager
 * (`conversionWebhook.certManager`), on a real control plane with cert-manager's own CRDs
 * (test/support/cert-manager/version): the Issuers and Certificates the construct renders are
 * taken by cert-manager's schemas, and the operator, started with
 * `--conversion-webhook-certificates=external` as its ServiceAccount under the RBAC and policy
 * rendered for that mode, serves from the Secret and never writes it or the CRDs.
 *
 * cert-manager's controller and cainjector do not run here (their commands are Go modules the
 * module proxy does not serve): the test writes what they would, a `kubernetes.io/tls` Secret
 * with `tls.crt`, `tls.key` and `ca.crt` from a CA, the CA in the CRDs' caBundle, and a renewal
 * with a new key, as `rotationPolicy: Always` makes it.
 */
import { expect } from 'chai';
import { Chart, Testing } from 'cdk8s';
import { readdirSync, readFileSync } from 'node:fs';
import { join } from 'node:path';
import { connect as tlsConnect } from 'node:tls';
import { WebhookCertificates } from '../../infra/cert-manager';
import * as v1 from '../../operator/api/v1';
import * as v2 from '../../operator/api/v2';
import { issueCa, issueServing, serviceDnsNames, type IssuedCertificate } from '../../operator/conversion/certificates';
import type { RunningOperator } from '../../operator/operator';
import { KubeClient } from '../../operator/runtime/client';
import type { ControlPlane } from '../support/control-plane';
import { conversionTraffic, crdName, startConversionStack, VERSION_PAIRS, WEBHOOK_SECRET, type ConversionStack } from '../support/conversion-stack';
import { eventually } from '../support/eventually';
import { apply, getJson, kubectlOk } from '../support/kube';
import { certManagerCrds } from '../support/test-tools';
import { testApp } from '../support/test-app';

const SERVICE = 'bucketoperator-webhook';
const b64 = (s: string) => Buffer.from(s, 'utf8').toString('base64');
const DAY = 24 * 60 * 60 * 1000;

interface SecretJson {
  metadata: { resourceVersion: string; labels?: Record<string, string> };
}
interface CrdJson {
  metadata: { managedFields?: Array<{ manager: string }> };
  spec: { conversion?: { webhook?: { clientConfig?: { caBundle?: string } } } };
}

/** The fingerprint of the certificate served on 127.0.0.1:`port`. */
function servedFingerprint(port: number): Promise<string> {
  return new Promise((resolve, reject) => {
    const socket = tlsConnect({ host: '127.0.0.1', port, rejectUnauthorized: false }, () => {
      resolve(socket.getPeerCertificate().fingerprint256);
      socket.end();
    });
    socket.on('error', reject);
  });
}

describe('conversion webhook with certificates kept by cert-manager (its CRDs on a real control plane)', function () {
  this.timeout(180_000);
  let stack: ConversionStack;
  let cp: ControlPlane;
  let ns = '';
  let opNs = '';
  let op: RunningOperator | undefined;
  let ca: IssuedCertificate;

  /** What cert-manager's CA issuer writes into the Certificate's Secret. */
  const servingSecret = (serving: IssuedCertificate) => ({
    apiVersion: 'v1',
    kind: 'Secret',
    type: 'kubernetes.io/tls',
    metadata: { name: WEBHOOK_SECRET, namespace: opNs, labels: { 'app.kubernetes.io/name': 'bucketoperator' } },
    data: { 'tls.crt': b64(serving.certificate), 'tls.key': b64(serving.privateKey), 'ca.crt': b64(ca.certificate) },
  });
  const issue = () => {
    const now = Date.now();
    return issueServing({
      commonName: SERVICE,
      dnsNames: serviceDnsNames(SERVICE, opNs),
      // The API server calls the webhook by URL on loopback here (no Service routing).
      ipAddresses: ['127.0.0.1'],
      notBefore: new Date(now - 60_000),
      notAfter: new Date(now + 90 * DAY),
      ca,
    });
  };

  before(async () => {
    stack = await startConversionStack('certmanager', { certificates: 'external' });
    ({ cp, ns, opNs } = stack);
    const dir = certManagerCrds();
    for (const f of readdirSync(dir).filter((n) => n.endsWith('.yaml'))) {
      await kubectlOk(cp, ['apply', '--server-side', '-f', '-'], readFileSync(join(dir, f), 'utf8'));
    }
    await kubectlOk(cp, ['wait', '--for=condition=Established', '--timeout=60s', 'crd/certificates.cert-manager.io', 'crd/issuers.cert-manager.io']);
  });

  after(async () => {
    await op?.stop();
    await stack?.stop();
  });

  it("cert-manager's schemas take the Issuers and Certificates the construct renders, with a CA of its own or a given ClusterIssuer", async () => {
    const own = new Chart(testApp(), 'own');
    const rendered = new WebhookCertificates(own, 'certs', { namespace: opNs, serviceName: SERVICE, secretName: WEBHOOK_SECRET });
    await kubectlOk(cp, ['apply', '-f', '-'], JSON.stringify({ apiVersion: 'v1', kind: 'List', items: Testing.synth(own) }));
    const certs = JSON.parse(await kubectlOk(cp, ['get', 'certificates.cert-manager.io', '-n', opNs, '-o', 'json'])) as {
      items: Array<{ metadata: { name: string }; spec: { secretName: string; isCA?: boolean } }>;
    };
    expect(certs.items.map((c) => [c.metadata.name, c.spec.secretName, c.spec.isCA ?? false])).to.have.deep.members([
      ['bucketoperator-webhook-ca', 'bucketoperator-webhook-ca', true],
      [SERVICE, WEBHOOK_SECRET, false],
    ]);
    expect(rendered.injectCaFrom).to.equal(`${opNs}/${SERVICE}`);

    const given = new Chart(testApp(), 'given');
    new WebhookCertificates(given, 'certs', {
      namespace: opNs,
      serviceName: 'other-webhook',
      secretName: 'other-cert',
      issuerRef: { name: 'company-ca', kind: 'ClusterIssuer' },
    });
    await kubectlOk(cp, ['apply', '--dry-run=server', '-f', '-'], JSON.stringify({ apiVersion: 'v1', kind: 'List', items: Testing.synth(given) }));
    // And the schema check can fail: cert-manager refuses a Certificate without an issuerRef.
    const bad = await cp.kubectl(['apply', '--dry-run=server', '-f', '-'], {
      input: JSON.stringify({
        apiVersion: 'cert-manager.io/v1',
        kind: 'Certificate',
        metadata: { name: 'bad', namespace: opNs },
        spec: { secretName: 'x', dnsNames: ['a.example'] },
      }),
    });
    expect(bad.code).to.not.equal(0);
    expect(bad.stderr).to.match(/spec\.issuerRef: Required value/);
  });

  it('serves from the Secret cert-manager writes, never writes it or the CRDs, and follows a renewal with zero failed conversions', async () => {
    // cert-manager's part: the CA, the serving certificate in the Secret, the CA in the caBundle.
    const now = Date.now();
    ca = issueCa({ commonName: 'bucketoperator-webhook-ca', notBefore: new Date(now - 60_000), notAfter: new Date(now + 3650 * DAY) });
    await kubectlOk(cp, ['apply', '-f', '-'], JSON.stringify(servingSecret(issue())));
    for (const [def] of VERSION_PAIRS) {
      await kubectlOk(cp, [
        'patch',
        'crd',
        crdName(def),
        '--type=merge',
        '--field-manager=cert-manager-cainjector',
        '-p',
        JSON.stringify({ spec: { conversion: { webhook: { clientConfig: { caBundle: b64(ca.certificate) } } } } }),
      ]);
    }
    await apply(cp, {
      apiVersion: v1.API_VERSION,
      kind: 'StorageBucket',
      metadata: { name: 'read-in-v2', namespace: ns },
      spec: { region: 'eu-west-1', sizeGB: 7, providerRef: { name: 'default' } },
    });

    op = stack.startOperator({ logEnv: 'CERT_MANAGER_LOG' });
    await op.manager.elected();
    const client = new KubeClient({ restConfig: cp.restConfig(), userAgent: 'cert-manager-traffic', maxRetries: 0, qps: 0 });
    const bucketsV2 = { group: v2.GROUP, version: v2.VERSION, kind: 'StorageBucket', plural: 'storagebuckets', namespaced: true };
    try {
      const got = await eventually(
        () =>
          client.get<{ metadata?: object; spec: { forProvider: { size: string } } }>(bucketsV2, ns, 'read-in-v2').then(
            (b) => b,
            () => undefined,
          ),
        { description: 'a v2 read through the webhook', timeoutMs: 60_000 },
      );
      expect(got.spec.forProvider.size).to.equal('7G');

      const traffic = conversionTraffic(2, () => client.get(bucketsV2, ns, 'read-in-v2'));
      // cert-manager renews: a new key and certificate from the same CA, the caBundle unchanged.
      const before = await servedFingerprint(stack.port);
      await kubectlOk(cp, ['apply', '-f', '-'], JSON.stringify(servingSecret(issue())));
      await eventually(async () => ((await servedFingerprint(stack.port)) !== before ? true : undefined), {
        description: 'the renewed certificate to be served',
        timeoutMs: 30_000,
        intervalMs: 200,
      });
      await new Promise((r) => setTimeout(r, 2_000));
      const { ok, failures } = await traffic.stop();
      expect(failures).to.deep.equal([]);
      expect(ok).to.be.greaterThan(20);
    } finally {
      client.close();
    }

    // Nothing of it was written by the operator: not the Secret, not the caBundle.
    const secret = (await getJson<SecretJson>(cp, 'secret', WEBHOOK_SECRET, opNs))!;
    const managers = await kubectlOk(cp, ['get', 'secret', WEBHOOK_SECRET, '-n', opNs, '-o', 'jsonpath={.metadata.managedFields[*].manager}']);
    expect(managers.split(/\s+/)).to.not.include('bucketoperator');
    expect(secret.metadata.labels).to.deep.equal({ 'app.kubernetes.io/name': 'bucketoperator' });
    for (const [def] of VERSION_PAIRS) {
      const crd = (await getJson<CrdJson>(cp, 'crd', crdName(def), ''))!;
      expect(crd.spec.conversion?.webhook?.clientConfig?.caBundle).to.equal(b64(ca.certificate));
      expect((crd.metadata.managedFields ?? []).map((f) => f.manager)).to.not.include('bucketoperator');
    }
  });

  it('as its ServiceAccount the operator may read its Secret, and neither change nor delete it, nor touch its CRDs', async () => {
    const as = (args: string[], input?: string) => cp.kubectl(args, { kubeconfig: stack.saKubeconfig, ...(input === undefined ? {} : { input }) });
    expect((await as(['get', 'secret', WEBHOOK_SECRET, '-n', opNs, '-o', 'name'])).code).to.equal(0);
    // Refused by RBAC or, where the operator's namespace role allows the verb, by its least-privilege policy.
    const refusals: Array<[string, string[]]> = [
      ['label its Secret', ['label', 'secret', WEBHOOK_SECRET, '-n', opNs, 'x=y', '--dry-run=server']],
      ['delete its Secret', ['delete', 'secret', WEBHOOK_SECRET, '-n', opNs, '--dry-run=server']],
      ...VERSION_PAIRS.map(([def]): [string, string[]] => [
        `patch ${crdName(def)}`,
        [
          'patch',
          'crd',
          crdName(def),
          '--type=merge',
          '--dry-run=server',
          '-p',
          JSON.stringify({ spec: { conversion: { webhook: { clientConfig: { caBundle: b64('x') } } } } }),
        ],
      ]),
    ];
    for (const [what, args] of refusals) {
      const res = await as(args);
      expect(res.code, `${what} was allowed`).to.not.equal(0);
      expect(res.stderr, what).to.match(/forbidden|denied request/i);
    }
  });
});
