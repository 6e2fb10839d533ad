/** Public API of the runtime: generic controller machinery, no domain knowledge. */
export * from './types';
export * from './reconcile';
export * from './clock';
export * from './rate-limiter';
export * from './workqueue';
export * from './predicates';
export * from './controller';
export * from './metrics';
export * from './leader-election';
export * from './health';
export * from './manager';
export * from './conditions';
export * from './logging';
export * from './client';
export * from './cache';
export * from './reflector';
export * from './informer';
export * from './informer-factory';
export * from './rbac';
// TODO: export apply, status, finalizers and events once those modules land.
