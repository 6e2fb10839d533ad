/**
 * The API versions of the operator's kinds, by name only: no schema or type comes with them,
 * so the construct library's declarations can name them without pulling in the API types.
 */

/** The API versions of the operator's kinds, oldest first. */
export const API_VERSIONS = ['v1', 'v2'] as const;

/** One of {@link API_VERSIONS}. */
export type ApiVersionName = (typeof API_VERSIONS)[number];

/**
 * Why `value`, given as `field`, is not one of {@link API_VERSIONS} (props typed in TypeScript
 * can still hold anything from JavaScript or JSON), or undefined when it is.
 */
export function apiVersionProblem(field: string, value: unknown): string | undefined {
  return (API_VERSIONS as readonly unknown[]).includes(value)
    ? undefined
    : `${field} must be one of ${API_VERSIONS.join(', ')}, got '${String(value)}'`;
}
