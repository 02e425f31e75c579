export { InvalidationBus, CHANNEL } from './bus.js';
export { TopicCache } from './cache.js';
export { ChannelListener, type ChannelListenerOptions } from './listener.js';
export { WorkspaceCache, workspaceTopic, freezeDeep, type CacheBus, type WorkspaceCacheOptions } from './workspace-cache.js';
