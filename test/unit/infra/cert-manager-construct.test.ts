/**
 * `conversionWebhook.certManager`, as rendered: cert-manager keeps the webhook's certificates
 * (a CA of its own, or the issuer given), its cainjector fills the CRDs' caBundle, and the
 * operator is told to only read the Secret and is granted nothing more.
 */
import { expect } from 'chai';
import { ofKind, synthOperator as synth, type Manifest as Obj } from '../../support/synth-operator';

const named = (objs: Obj[], kind: string, name: string) => ofKind(objs, kind, name)[0];
const NS = 'bucketoperator-system';

describe('BucketOperator with cert-manager keeping the webhook certificates', () => {
  const objs = synth({ conversionWebhook: { certManager: {} } });

  it('renders a CA of its own and a serving Certificate for the webhook Secret and Service', () => {
    expect(ofKind(objs, 'Issuer').map((i) => [i['metadata'].name, i['metadata'].namespace, i['spec']])).to.have.deep.members([
      ['bucketoperator-selfsigned', NS, { selfSigned: {} }],
      ['bucketoperator-webhook-ca', NS, { ca: { secretName: 'bucketoperator-webhook-ca' } }],
    ]);
    const ca = named(objs, 'Certificate', 'bucketoperator-webhook-ca')!;
    expect(ca['spec']).to.include({ isCA: true, secretName: 'bucketoperator-webhook-ca' });
    expect(ca['spec'].issuerRef).to.deep.equal({ name: 'bucketoperator-selfsigned', kind: 'Issuer', group: 'cert-manager.io' });
    const serving = named(objs, 'Certificate', 'bucketoperator-webhook')!;
    expect(serving['metadata'].namespace).to.equal(NS);
    expect(serving['spec'].secretName).to.equal('bucketoperator-webhook-cert');
    expect(serving['spec'].dnsNames).to.deep.equal([`bucketoperator-webhook.${NS}.svc`, `bucketoperator-webhook.${NS}.svc.cluster.local`]);
    expect(serving['spec'].issuerRef).to.deep.equal({ name: 'bucketoperator-webhook-ca', kind: 'Issuer', group: 'cert-manager.io' });
    // Nothing marks the Secret as the operator's: its least-privilege policy keeps it read-only.
    expect(serving['spec'].secretTemplate.labels).to.not.have.property('storage.avalonhosting.example/managed-by');
  });

  it("annotates both CRDs for cert-manager's cainjector and renders no caBundle", () => {
    for (const crd of ofKind(objs, 'CustomResourceDefinition')) {
      expect(crd['metadata'].annotations).to.deep.equal({ 'cert-manager.io/inject-ca-from': `${NS}/bucketoperator-webhook` });
      expect(crd['spec'].conversion.webhook.clientConfig).to.not.have.property('caBundle');
    }
  });

  it('tells the operator to only read the Secret, and grants only that', () => {
    const args = ofKind(objs, 'Deployment')[0]?.['spec'].template.spec.containers[0].args as string[];
    expect(args).to.include('--conversion-webhook-certificates=external');
    const role = named(objs, 'Role', 'bucketoperator-conversion-webhook')!;
    expect(role['rules']).to.deep.equal([
      { apiGroups: [''], resources: ['secrets'], resourceNames: ['bucketoperator-webhook-cert'], verbs: ['get', 'list', 'watch'] },
    ]);
    // No write to CRDs, and no policy for writes the operator cannot make.
    // The CRDs' caBundle is cert-manager's to write: no rule on CRDs but the uninstall guard's read.
    const crdRules = ofKind(objs, 'ClusterRole')
      .flatMap((r) => r['rules'] as { resources?: string[]; verbs: string[] }[])
      .filter((rule) => (rule.resources ?? []).includes('customresourcedefinitions'));
    expect(crdRules.flatMap((rule) => rule.verbs).sort()).to.deep.equal(['get', 'list', 'watch']);
    expect(ofKind(objs, 'ValidatingAdmissionPolicy').map((p) => p['metadata'].name)).to.deep.equal([
      `bucketoperator-least-privilege.${NS}`,
      `bucketoperator-provenance.${NS}`,
    ]);
    const main = ofKind(objs, 'ValidatingAdmissionPolicy')[0]!;
    expect(JSON.stringify(main['spec'].matchConditions)).to.not.include('not-webhook-secret');
  });

  it('uses the issuer given, and makes no CA then', () => {
    const given = synth({ conversionWebhook: { certManager: { issuerRef: { name: 'company-ca', kind: 'ClusterIssuer' } } } });
    expect(ofKind(given, 'Issuer')).to.deep.equal([]);
    expect(ofKind(given, 'Certificate').map((c) => c['metadata'].name)).to.deep.equal(['bucketoperator-webhook']);
    expect(ofKind(given, 'Certificate')[0]?.['spec'].issuerRef).to.deep.equal({
      name: 'company-ca',
      kind: 'ClusterIssuer',
      group: 'cert-manager.io',
    });
    expect(() => synth({ conversionWebhook: { certManager: { issuerRef: { name: 'Not_A_Name' } } } })).to.throw(
      'BucketOperator: props.conversionWebhook.certManager.issuerRef must name an Issuer or ClusterIssuer',
    );
  });

  it('without it, the operator keeps the certificates: no cert-manager objects or annotation', () => {
    const own = synth({ conversionWebhook: {} });
    expect([...ofKind(own, 'Issuer'), ...ofKind(own, 'Certificate')]).to.deep.equal([]);
    for (const crd of ofKind(own, 'CustomResourceDefinition')) expect(crd['metadata']).to.not.have.property('annotations');
    const args = ofKind(own, 'Deployment')[0]?.['spec'].template.spec.containers[0].args as string[];
    expect(args).to.include('--conversion-webhook-certificates=operator');
  });
});
