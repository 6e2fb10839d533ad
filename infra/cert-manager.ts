/**
 * The conversion webhook's certificates kept by cert-manager instead of the operator: a
 * serving Certificate whose Secret is the one every replica serves from, and, unless an issuer
 * is given, a CA of its own (a self-signed Issuer makes a CA Certificate, a CA Issuer signs the
 * serving one). The CRDs carry `cert-manager.io/inject-ca-from`, so cert-manager's cainjector
 * puts that Certificate's CA into their caBundle.
 *
 * A CA chain rather than a self-signed serving certificate: renewing the serving certificate
 * (every 60 days here) then leaves the caBundle alone, so the API server never meets a
 * certificate its bundle does not yet trust. The CA itself lives ten years.
 */
import { ApiObject } from 'cdk8s';
import { Construct } from 'constructs';
import { serviceDnsNames } from '../operator/conversion/certificates';
import { COMMON_LABELS } from './labels';

/** An Issuer or ClusterIssuer of cert-manager (or of an external issuer in another group). */
export interface CertManagerIssuerRef {
  readonly name: string;
  /** @default 'Issuer' (in the operator namespace) */
  readonly kind?: string;
  /** @default 'cert-manager.io' */
  readonly group?: string;
}

/** Properties of {@link WebhookCertificates}. */
export interface WebhookCertificatesProps {
  /** The operator namespace, where the Secret, the Service and the Certificates live. */
  readonly namespace: string;
  /** The webhook Service, whose DNS names the serving certificate carries. */
  readonly serviceName: string;
  /** The Secret cert-manager writes and the operator serves from. */
  readonly secretName: string;
  /**
   * The issuer of the serving certificate; its CA must be in the Secret's `ca.crt`, as CA,
   * Vault and self-signed issuers put it.
   * @default a CA of its own, made by a self-signed Issuer
   */
  readonly issuerRef?: CertManagerIssuerRef;
}

const CERT_MANAGER_API = 'cert-manager.io/v1';

/** The Issuers and Certificates of the webhook. */
export class WebhookCertificates extends Construct {
  /** The serving Certificate, as `cert-manager.io/inject-ca-from` names it: `<namespace>/<name>`. */
  public readonly injectCaFrom: string;

  constructor(scope: Construct, id: string, props: WebhookCertificatesProps) {
    super(scope, id);
    const labels = { ...COMMON_LABELS };
    const metadata = (name: string) => ({ name, namespace: props.namespace, labels });
    const key = { algorithm: 'ECDSA', size: 256, rotationPolicy: 'Always' };
    let issuerRef: Required<CertManagerIssuerRef>;
    if (props.issuerRef) {
      issuerRef = { kind: 'Issuer', group: 'cert-manager.io', ...props.issuerRef };
    } else {
      const selfSigned = 'bucketoperator-selfsigned';
      const ca = 'bucketoperator-webhook-ca';
      new ApiObject(this, 'self-signed-issuer', {
        apiVersion: CERT_MANAGER_API,
        kind: 'Issuer',
        metadata: metadata(selfSigned),
        spec: { selfSigned: {} },
      });
      new ApiObject(this, 'ca-certificate', {
        apiVersion: CERT_MANAGER_API,
        kind: 'Certificate',
        metadata: metadata(ca),
        spec: {
          isCA: true,
          commonName: ca,
          secretName: ca,
          duration: '87600h',
          renewBefore: '720h',
          privateKey: key,
          issuerRef: { name: selfSigned, kind: 'Issuer', group: 'cert-manager.io' },
        },
      });
      new ApiObject(this, 'ca-issuer', { apiVersion: CERT_MANAGER_API, kind: 'Issuer', metadata: metadata(ca), spec: { ca: { secretName: ca } } });
      issuerRef = { name: ca, kind: 'Issuer', group: 'cert-manager.io' };
    }
    const serving = props.serviceName;
    new ApiObject(this, 'serving-certificate', {
      apiVersion: CERT_MANAGER_API,
      kind: 'Certificate',
      metadata: metadata(serving),
      spec: {
        secretName: props.secretName,
        // Labels on the Secret: the operator's own label is not among them, so its
        // least-privilege policy keeps it from ever writing this Secret.
        secretTemplate: { labels },
        commonName: props.serviceName,
        dnsNames: serviceDnsNames(props.serviceName, props.namespace),
        duration: '2160h',
        renewBefore: '720h',
        usages: ['server auth', 'digital signature'],
        privateKey: key,
        issuerRef,
      },
    });
    this.injectCaFrom = `${props.namespace}/${serving}`;
  }
}
