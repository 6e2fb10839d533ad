/**
 * Names of the objects a StorageBucket owns. A leaf module with no imports, because the
 * construct library (infra/) publishes the same names to users' cdk8s apps and must not pull
 * the operator's runtime in with them.
 */

/** Name of the owned Secret with the bucket's connection details. */
export function accessSecretName(bucketName: string): string {
  return `${bucketName}-access`;
}

/** Name of the owned Service (the bucket's own name, so it is easy to find). */
export function serviceName(bucketName: string): string {
  return bucketName;
}
