import * as v from 'valibot';
import { Timestamp } from './common.js';

/** The views of the internal admin interface (X-Admin-Token); admin_create_user answers a User. */

/** admin_create_session: the session token (ses_…), answered this once, and when it expires. */
export const AdminSession = v.object({ token: v.string(), expires_at: Timestamp });

export { LoginLink } from '@wds/identity';
