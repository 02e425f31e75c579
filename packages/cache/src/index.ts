export { InvalidationBus, CHANNEL } from './bus.js';
export { TopicCache } from './cache.js';
