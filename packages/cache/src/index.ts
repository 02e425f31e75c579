export { InvalidationBus, CHANNEL } from './bus.js';
export { TopicCache, workspaceTopic, freezeDeep, type CacheBus, type TopicCacheOptions } from './cache.js';
export { ChannelListener, type ChannelListenerOptions } from './listener.js';
