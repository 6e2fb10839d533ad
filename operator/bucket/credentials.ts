/**
 * What makes a Secret provider credentials, and what one is worth as such: the opt-in label,
 * the command that sets it, and the judgement shared by connect() (connect.ts), the config's
 * Ready condition and the kubectl plugin's trace. Pure, and a leaf (the API's names and the
 * reasons only), so the plugin judges credentials without loading the provider client or the
 * runtime.
 */
import type { V1Secret } from '@kubernetes/client-node';
import { CREDENTIALS_SECRET_LABEL, CREDENTIALS_SECRET_TYPE } from '../api/v1/well-known';
import { Reason } from './reasons';

/** Label selector of the credentials informer: `<CREDENTIALS_SECRET_LABEL>=<CREDENTIALS_SECRET_TYPE>`. */
export const CREDENTIALS_SELECTOR = `${CREDENTIALS_SECRET_LABEL}=${CREDENTIALS_SECRET_TYPE}`;

/** True when `secret` opted in as provider credentials. */
export function isCredentialsSecret(secret: V1Secret): boolean {
  return secret.metadata?.labels?.[CREDENTIALS_SECRET_LABEL] === CREDENTIALS_SECRET_TYPE;
}

/** The command that opts a Secret in, as status messages and the README give it. */
export function labelCommand(namespace: string, name: string): string {
  return `kubectl label secret -n ${namespace} ${name} ${CREDENTIALS_SELECTOR}`;
}

/** Keeps only what may be known of a Secret that did not opt in: its metadata. */
export function withoutUnlabelledData(secret: V1Secret | undefined): V1Secret | undefined {
  if (!secret || isCredentialsSecret(secret)) return secret;
  return { apiVersion: secret.apiVersion, kind: secret.kind, metadata: secret.metadata };
}

/** The API key a config's Secret yields, or why it yields none. */
export type CredentialsVerdict =
  | { readonly ok: true; readonly apiKey: string }
  | { readonly ok: false; readonly reason: typeof Reason.SecretNotFound | typeof Reason.SecretNotLabeled; readonly message: string };

/** Which Secret and key a config names. */
export interface SecretRef {
  readonly namespace: string;
  readonly name: string;
  readonly key: string;
}

/**
 * Decides what `secret` (as found for `ref`, or undefined) is worth as credentials. The label
 * is checked before any data is looked at. Shared by connect() and the config's Ready
 * condition, so a bucket and its config always give the same reason.
 */
export function judgeCredentials(ref: SecretRef, secret: V1Secret | undefined): CredentialsVerdict {
  const { namespace, name, key } = ref;
  if (!secret) return { ok: false, reason: Reason.SecretNotFound, message: `Secret ${namespace}/${name} not found` };
  if (!isCredentialsSecret(secret)) {
    return {
      ok: false,
      reason: Reason.SecretNotLabeled,
      message: `Secret ${namespace}/${name} is not labelled as provider credentials; to use it run: ${labelCommand(namespace, name)}`,
    };
  }
  const encoded = secret.data?.[key];
  if (!encoded) return { ok: false, reason: Reason.SecretNotFound, message: `key ${key} missing in Secret ${namespace}/${name}` };
  const apiKey = Buffer.from(encoded, 'base64').toString('utf8').trim();
  if (!apiKey) return { ok: false, reason: Reason.SecretNotFound, message: `key ${key} in Secret ${namespace}/${name} is empty` };
  return { ok: true, apiKey };
}
