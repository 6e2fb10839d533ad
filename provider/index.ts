/** Public surface of the mock storage provider for tests and tools in the same process. */
export { startProvider, DEFAULT_ACTIVATION_DELAY_MS, DEFAULT_MAX_BODY_BYTES } from './server';
export { defaultFaults } from './faults';
export * from './types';
