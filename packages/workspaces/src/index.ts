export * from './views.js';
export * from './workspaces.js';
export * from './members.js';
export * from './redirect-uris.js';
