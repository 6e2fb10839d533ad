import { execFile } from 'node:child_process';
import { mkdir, writeFile } from 'node:fs/promises';
import { randomBytes } from 'node:crypto';
import { join } from 'node:path';
import { promisify } from 'node:util';

const execFileAsync = promisify(execFile);

/** Paths of the key material a control plane is started with, all PEM files. */
export interface Pki {
  caCert: string;
  caKey: string;
  servingCert: string;
  servingKey: string;
  adminCert: string;
  adminKey: string;
  controllerManagerCert: string;
  controllerManagerKey: string;
  serviceAccountKey: string;
  serviceAccountPublicKey: string;
  frontProxyCaCert: string;
  frontProxyClientCert: string;
  frontProxyClientKey: string;
  /** The API server's client certificate towards kubelets (system:masters); only with `PkiOptions.kubeletClient`. */
  kubeletClientCert?: string;
  kubeletClientKey?: string;
}

/** Additions to the default PKI, for a control plane that nodes join. */
export interface PkiOptions {
  /** More IP addresses in the serving certificate (the address Pods reach the API server at). */
  servingIps?: readonly string[];
  /** Also issue the API server's client certificate for kubelet connections (logs, exec). */
  kubeletClient?: boolean;
}

/** A certificate to issue with the control plane's CA. */
export interface CertificateRequest {
  /** File name stem, unique within the directory. */
  name: string;
  commonName: string;
  /** Becomes the certificate's O entries (Kubernetes groups). */
  organizations?: readonly string[];
  usage: 'client' | 'server';
  ipSans?: readonly string[];
  dnsSans?: readonly string[];
}

async function openssl(args: string[]): Promise<void> {
  try {
    await execFileAsync('openssl', args);
  } catch (err) {
    throw new Error(`openssl ${args[0]} failed (is the openssl CLI installed?)`, { cause: err });
  }
}

// P-256 keys: generated in milliseconds where RSA takes tens, and start time is paid per run.
const EC_KEY = ['-newkey', 'ec', '-pkeyopt', 'ec_paramgen_curve:prime256v1', '-nodes'];
const DAYS = '30';

/** The CN kube-apiserver presents to aggregated API servers (`--requestheader-allowed-names`). */
export const FRONT_PROXY_CLIENT_CN = 'front-proxy-client';

async function leaf(
  dir: string,
  name: string,
  subject: string,
  extensions: string[],
  ca: { cert: string; key: string },
): Promise<{ cert: string; key: string }> {
  const key = join(dir, `${name}.key`);
  const csr = join(dir, `${name}.csr`);
  const cert = join(dir, `${name}.crt`);
  const extFile = join(dir, `${name}.ext`);
  await writeFile(extFile, ['[ext]', ...extensions, ''].join('\n'));
  await openssl(['req', '-new', ...EC_KEY, '-keyout', key, '-out', csr, '-subj', subject]);
  // `x509 -req` ignores the extensions of the request, so only the ones listed here are signed.
  await openssl([
    'x509',
    '-req',
    '-in',
    csr,
    '-CA',
    ca.cert,
    '-CAkey',
    ca.key,
    '-set_serial',
    `0x${randomBytes(16).toString('hex')}`,
    '-days',
    DAYS,
    '-out',
    cert,
    '-extfile',
    extFile,
    '-extensions',
    'ext',
  ]);
  return { cert, key };
}

async function selfSignedCa(dir: string, name: string, cn: string): Promise<{ cert: string; key: string }> {
  const cert = join(dir, `${name}.crt`);
  const key = join(dir, `${name}.key`);
  await openssl([
    'req',
    '-x509',
    ...EC_KEY,
    '-keyout',
    key,
    '-out',
    cert,
    '-days',
    DAYS,
    '-subj',
    `/CN=${cn}`,
    '-addext',
    'basicConstraints=critical,CA:TRUE',
    '-addext',
    'keyUsage=critical,keyCertSign,cRLSign',
  ]);
  return { cert, key };
}

function subjectOf(req: CertificateRequest): string {
  const safe = (v: string): string => {
    if (/[/=+,\\]/.test(v)) throw new Error(`certificate subject value "${v}" has characters openssl -subj cannot take`);
    return v;
  };
  return `${(req.organizations ?? []).map((o) => `/O=${safe(o)}`).join('')}/CN=${safe(req.commonName)}`;
}

/** Issues a certificate signed by `ca` into `dir` (`<name>.crt`, `<name>.key`). */
export async function issueCertificate(
  dir: string,
  req: CertificateRequest,
  ca: { cert: string; key: string },
): Promise<{ cert: string; key: string }> {
  await mkdir(dir, { recursive: true });
  const sans = [...(req.ipSans ?? []).map((ip) => `IP:${ip}`), ...(req.dnsSans ?? []).map((d) => `DNS:${d}`)];
  const ext = [
    'basicConstraints=critical,CA:FALSE',
    'keyUsage=critical,digitalSignature',
    `extendedKeyUsage=${req.usage === 'server' ? 'serverAuth' : 'clientAuth'}`,
    ...(sans.length > 0 ? [`subjectAltName=${sans.join(',')}`] : []),
  ];
  return leaf(dir, req.name, subjectOf(req), ext, ca);
}

/**
 * Creates a throw-away PKI with the openssl CLI: a CA, an apiserver serving certificate for
 * 127.0.0.1/localhost (and the in-cluster `kubernetes` service names), an admin client
 * certificate (CN=admin, O=system:masters), a kube-controller-manager client certificate,
 * the service-account token signing key pair, and the aggregation layer's front-proxy CA and
 * client certificate.
 */
export async function createPki(dir: string, opts: PkiOptions = {}): Promise<Pki> {
  await mkdir(dir, { recursive: true });
  const serviceAccountKey = join(dir, 'sa.key');
  const serviceAccountPublicKey = join(dir, 'sa.pub');
  const [ca, frontProxyCa] = await Promise.all([
    selfSignedCa(dir, 'ca', 'bucketoperator-test-ca'),
    // A separate CA for the aggregation layer, as kubeadm makes: kube-controller-manager's
    // delegated authentication expects a request-header CA and logs errors in a loop without one.
    selfSignedCa(dir, 'front-proxy-ca', 'bucketoperator-test-front-proxy-ca'),
  ]);
  const servingExt = [
    'basicConstraints=critical,CA:FALSE',
    'keyUsage=critical,digitalSignature',
    'extendedKeyUsage=serverAuth',
    'subjectAltName=IP:127.0.0.1,DNS:localhost,IP:10.0.0.1,DNS:kubernetes,DNS:kubernetes.default,' +
      'DNS:kubernetes.default.svc,DNS:kubernetes.default.svc.cluster.local' +
      (opts.servingIps ?? []).map((ip) => `,IP:${ip}`).join(''),
  ];
  const clientExt = ['basicConstraints=critical,CA:FALSE', 'keyUsage=critical,digitalSignature', 'extendedKeyUsage=clientAuth'];
  // Random serials (not -CAcreateserial and its shared ca.srl) let the leaves be signed concurrently.
  const [serving, admin, kcm, frontProxyClient, , kubeletClient] = await Promise.all([
    leaf(dir, 'apiserver', '/CN=kube-apiserver', servingExt, ca),
    leaf(dir, 'admin', '/O=system:masters/CN=admin', clientExt, ca),
    // The bootstrap RBAC policy binds this user name to the system:kube-controller-manager
    // role, so the controller manager runs with its real permissions, not as a cluster admin.
    leaf(dir, 'kube-controller-manager', '/CN=system:kube-controller-manager', clientExt, ca),
    leaf(dir, 'front-proxy-client', `/CN=${FRONT_PROXY_CLIENT_CN}`, clientExt, frontProxyCa),
    openssl(['genpkey', '-algorithm', 'RSA', '-pkeyopt', 'rsa_keygen_bits:2048', '-out', serviceAccountKey]).then(() =>
      openssl(['pkey', '-in', serviceAccountKey, '-pubout', '-out', serviceAccountPublicKey]),
    ),
    // kubelets authorize the API server's logs/exec requests by this identity.
    opts.kubeletClient ? leaf(dir, 'apiserver-kubelet-client', '/O=system:masters/CN=kube-apiserver-kubelet-client', clientExt, ca) : undefined,
  ]);
  return {
    caCert: ca.cert,
    caKey: ca.key,
    servingCert: serving.cert,
    servingKey: serving.key,
    adminCert: admin.cert,
    adminKey: admin.key,
    controllerManagerCert: kcm.cert,
    controllerManagerKey: kcm.key,
    serviceAccountKey,
    serviceAccountPublicKey,
    frontProxyCaCert: frontProxyCa.cert,
    frontProxyClientCert: frontProxyClient.cert,
    frontProxyClientKey: frontProxyClient.key,
    ...(kubeletClient ? { kubeletClientCert: kubeletClient.cert, kubeletClientKey: kubeletClient.key } : {}),
  };
}
