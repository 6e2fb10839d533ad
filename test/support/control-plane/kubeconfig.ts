import { readFile, writeFile } from 'node:fs/promises';
import { stringify } from 'yaml';

/** Credentials of a kubeconfig user: a client certificate pair, a bearer token, or a file holding one. */
export type KubeconfigCredentials = { certFile: string; keyFile: string } | { token: string } | { tokenFile: string };

/** What goes into a single-context kubeconfig file. */
export interface KubeconfigSpec {
  server: string;
  caFile: string;
  user: string;
  credentials: KubeconfigCredentials;
  namespace?: string;
}

const b64 = async (file: string): Promise<string> => (await readFile(file)).toString('base64');

/**
 * Writes a kubeconfig with one cluster, user and context. Certificates are embedded rather
 * than referenced, so the file keeps working when copied elsewhere (a CI artifact, a shell).
 */
export async function writeKubeconfig(path: string, spec: KubeconfigSpec): Promise<void> {
  const user: Record<string, string> =
    'token' in spec.credentials
      ? { token: spec.credentials.token }
      : 'tokenFile' in spec.credentials
        ? { tokenFile: spec.credentials.tokenFile }
        : {
            'client-certificate-data': await b64(spec.credentials.certFile),
            'client-key-data': await b64(spec.credentials.keyFile),
          };
  const config = {
    apiVersion: 'v1',
    kind: 'Config',
    clusters: [{ name: 'local', cluster: { server: spec.server, 'certificate-authority-data': await b64(spec.caFile) } }],
    users: [{ name: spec.user, user }],
    contexts: [
      {
        name: spec.user,
        context: { cluster: 'local', user: spec.user, ...(spec.namespace ? { namespace: spec.namespace } : {}) },
      },
    ],
    'current-context': spec.user,
    preferences: {},
  };
  await writeFile(path, stringify(config), { mode: 0o600 });
}
