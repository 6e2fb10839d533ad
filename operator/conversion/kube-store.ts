/**
 * {@link CertStore} on the API server: the webhook Secret in the operator's namespace and the
 * caBundle of the CRDs the webhook converts for. Every write is conditional: the Secret is
 * created (AlreadyExists when another replica made it) or replaced on the resourceVersion it
 * was read at, and a caBundle patch carries the CRD's resourceVersion when the caller read one.
 */
import { isAlreadyExists, isNotFound, type KubeClient, type KubeObject, type ResourceKind } from '../runtime';
import type { CertStore, CrdConversion, StoredCerts } from './keeper';
import type { CertData } from './secret-certs';

/** Core v1 Secrets. */
export const SECRET_KIND: ResourceKind = { group: '', version: 'v1', kind: 'Secret', plural: 'secrets', namespaced: true };
/** CustomResourceDefinitions (cluster-scoped). */
export const CRD_KIND: ResourceKind = {
  group: 'apiextensions.k8s.io',
  version: 'v1',
  kind: 'CustomResourceDefinition',
  plural: 'customresourcedefinitions',
  namespaced: false,
};

/** The part of KubeClient the store uses. */
export type StoreClient = Pick<KubeClient, 'get' | 'create' | 'update' | 'patch'>;

/** Where the store reads and writes. */
export interface KubeCertStoreOptions {
  readonly client: StoreClient;
  readonly namespace: string;
  readonly secretName: string;
  /** Names of the CRDs whose caBundle is kept. */
  readonly crdNames: readonly string[];
  /** Labels the Secret carries (set on create, kept on top of others' on a replace). */
  readonly labels: Readonly<Record<string, string>>;
  readonly fieldManager: string;
}

interface SecretJson extends KubeObject {
  type?: string;
  data?: Record<string, string>;
}

interface CrdJson extends KubeObject {
  spec?: {
    conversion?: {
      strategy?: string;
      webhook?: { clientConfig?: { caBundle?: string; url?: string; service?: { namespace?: string; name?: string } } };
    };
  };
}

/** Decodes a Secret's base64 `data`. */
export function decodeSecretData(data: Readonly<Record<string, string>> | undefined): CertData {
  return Object.fromEntries(Object.entries(data ?? {}).map(([k, v]) => [k, Buffer.from(v, 'base64').toString('utf8')]));
}

/** The webhook's {@link CertStore} on the API server. */
export function kubeCertStore(opts: KubeCertStoreOptions): CertStore {
  const { client, namespace, secretName } = opts;
  const encode = (data: CertData) => Object.fromEntries(Object.entries(data).map(([k, v]) => [k, Buffer.from(v, 'utf8').toString('base64')]));
  return {
    async read(): Promise<StoredCerts | undefined> {
      try {
        const secret = await client.get<SecretJson>(SECRET_KIND, namespace, secretName);
        const { labels, annotations } = secret.metadata ?? {};
        return {
          data: decodeSecretData(secret.data),
          resourceVersion: secret.metadata?.resourceVersion ?? '',
          ...(labels ? { labels } : {}),
          ...(annotations ? { annotations } : {}),
        };
      } catch (err) {
        if (isNotFound(err)) return undefined;
        throw err;
      }
    },
    async create(data) {
      const secret: SecretJson = {
        metadata: { name: secretName, namespace, labels: { ...opts.labels } },
        // kubernetes.io/tls so tools recognise tls.crt and tls.key; ca.crt and ca.key ride along.
        type: 'kubernetes.io/tls',
        data: encode(data),
      };
      try {
        await client.create(SECRET_KIND, secret, { fieldManager: opts.fieldManager });
        return true;
      } catch (err) {
        if (isAlreadyExists(err)) return false;
        throw err;
      }
    },
    async replace(data, previous) {
      // A read-modify-write on the resourceVersion read: what others added to the Secret (labels,
      // annotations, data keys) stays, and a concurrent change makes this fail, not vanish.
      const secret: SecretJson = {
        metadata: {
          name: secretName,
          namespace,
          labels: { ...previous.labels, ...opts.labels },
          ...(previous.annotations ? { annotations: { ...previous.annotations } } : {}),
          resourceVersion: previous.resourceVersion,
        },
        type: 'kubernetes.io/tls',
        data: encode({ ...previous.data, ...data }),
      };
      await client.update(SECRET_KIND, secret, { fieldManager: opts.fieldManager });
    },
    async crds(): Promise<CrdConversion[]> {
      const out: CrdConversion[] = [];
      for (const name of opts.crdNames) {
        let crd: CrdJson;
        try {
          crd = await client.get<CrdJson>(CRD_KIND, '', name);
        } catch (err) {
          if (isNotFound(err)) continue;
          throw err;
        }
        const conversion = crd.spec?.conversion;
        const clientConfig = conversion?.webhook?.clientConfig;
        const caBundle = clientConfig?.caBundle;
        const service = clientConfig?.service;
        out.push({
          name,
          ...(crd.metadata?.resourceVersion ? { resourceVersion: crd.metadata.resourceVersion } : {}),
          webhook: conversion?.strategy === 'Webhook',
          caBundle: caBundle === undefined ? undefined : Buffer.from(caBundle, 'base64').toString('utf8'),
          target: {
            ...(service ? { service: { namespace: service.namespace ?? '', name: service.name ?? '' } } : {}),
            ...(clientConfig?.url !== undefined ? { url: clientConfig.url } : {}),
          },
        });
      }
      return out;
    },
    async setCaBundle(name, caBundle, resourceVersion) {
      const patch = {
        // A merge patch with a resourceVersion is conditional: it fails with Conflict when the CRD changed since.
        ...(resourceVersion ? { metadata: { resourceVersion } } : {}),
        spec: { conversion: { webhook: { clientConfig: { caBundle: Buffer.from(caBundle, 'utf8').toString('base64') } } } },
      };
      await client.patch(CRD_KIND, '', name, patch, 'merge', { fieldManager: opts.fieldManager });
    },
  };
}
