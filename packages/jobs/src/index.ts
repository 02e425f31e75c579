export { BackgroundJobs, type BackgroundJobsOptions, type JobLogger, type JobOptions, type JobRun } from './background-jobs.js';
export { JobQueue } from './job-queue.js';
export { Maintenance, type MaintenanceOptions, type MaintenanceTask } from './maintenance.js';
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
