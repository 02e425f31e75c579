import { ServiceError } from '@wds/errors';

/** A programming error in the use of the queue (not started, unknown queue, bad options); never a user's fault. */
export const misuse = (message: string): ServiceError => new ServiceError('INTERNAL_ERROR', `@wds/jobs: ${message}`);
