/**
 * Runtime validation of v2 objects: the same functions as v1's, applied to the v2 schemas.
 * Importing the v2 schemas registers the checks TypeBox needs for their custom kinds.
 */
export { formatFieldErrors, validate, type FieldError } from '../v1/validate';
