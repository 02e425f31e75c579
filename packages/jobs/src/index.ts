export { JobQueue } from './job-queue.js';
export type {
  EnqueueOptions,
  FailedJob,
  Job,
  JobHandler,
  JobQueueOptions,
  JobState,
  RegisterOptions,
  StopOptions,
} from './types.js';
