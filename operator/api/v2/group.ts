/** The API group of every kind (the same as v1's) and this version's name. */
export { CATEGORY, GROUP } from '../v1/group';
import { GROUP } from '../v1/group';

/** This version. Served beside v1 once the conversion webhook runs; v1 stays the storage version. */
export const VERSION = 'v2';

/** `apiVersion` as written in v2 manifests. */
export const API_VERSION = `${GROUP}/${VERSION}`;
