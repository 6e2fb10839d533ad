/** The API group and version every kind of this operator belongs to. */
export const GROUP = 'storage.avalonhosting.example';

/** The served and stored version. */
export const VERSION = 'v1';

/** `apiVersion` as written in manifests. */
export const API_VERSION = `${GROUP}/${VERSION}`;

/** Category so `kubectl get bucketoperator` lists every kind of this operator. */
export const CATEGORY = 'bucketoperator';
