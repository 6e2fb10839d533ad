/** The storage provider's HTTP client: calls, error classes and rate limiting. */
export * from './client';
export * from './endpoint-policy';
export * from './errors';
export * from './rate-limiter';
export * from './types';
