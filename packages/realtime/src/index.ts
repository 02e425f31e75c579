export { RealtimeHub, CLOSE, ROW_CHANGES_CHANNEL, batchMac, type RealtimeHubOptions, type RealtimeSubscriber } from './hub.js';
export { attachRealtime, type RealtimeIdentity, type RealtimeServerOptions } from './server.js';
export { ClientMessage, MAX_TABLES, parseTablesParam, type ServerMessage } from './messages.js';
