/**
 * The API versions of the operator's kinds, by name only: no schema or type comes with them,
 * so the construct library's declarations can name them without pulling in the API types.
 */

/** The API versions of the operator's kinds, oldest first. */
export const API_VERSIONS = ['v1', 'v2'] as const;

/** One of {@link API_VERSIONS}. */
export type ApiVersionName = (typeof API_VERSIONS)[number];
