/**
 * The package version, and so the operator image's default tag. package.json is the source;
 * `npm run release` (scripts/release.ts) writes the same value here, and
 * test/unit/release/versions.test.ts fails when they differ. A constant rather than a read of
 * package.json at run time: infra/ runs from the sources and compiled into lib/infra/, and the
 * two are not the same distance from package.json.
 */
export const VERSION = '0.2.0';

/** The image the operator's Deployment runs unless told otherwise: `bucketoperator:<VERSION>`. */
export const DEFAULT_IMAGE = `bucketoperator:${VERSION}`;
