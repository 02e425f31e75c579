export * from './limiter.js';
export * from './address.js';
export * from './failures.js';
