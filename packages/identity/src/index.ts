export * from './tokens.js';
export * from './users.js';
export * from './sessions.js';
export * from './api-keys.js';
export * from './jwt.js';
export * from './authenticate.js';
export * from './token-exchange.js';
export * from './views.js';
