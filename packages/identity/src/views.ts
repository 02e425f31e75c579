import { field } from '@wds/db';
import * as v from 'valibot';

/** The views of users and API keys: what the API answers (apps/api re-exports them). */

/** A user as others may see them. */
export const PublicUser = v.object({ id: field.Uuid, email: v.string(), name: v.string() });
export type PublicUser = v.InferOutput<typeof PublicUser>;

/** An API key's metadata: never the key itself. */
export const ApiKeyMetadata = v.object({
  id: field.Uuid,
  name: v.string(),
  prefix: v.string(),
  created_at: field.Timestamp,
  expires_at: v.nullable(field.Timestamp),
  last_used_at: v.nullable(field.Timestamp),
});
export type ApiKeyMetadata = v.InferOutput<typeof ApiKeyMetadata>;

/** create_api_key: the metadata and the raw key, answered this once. */
export const ApiKeyCreated = v.object({ ...ApiKeyMetadata.entries, key: v.string() });
export type ApiKeyCreated = v.InferOutput<typeof ApiKeyCreated>;

/** create_login_link: the console's page with the one-time code in its fragment (shown this once), and its expiry. */
export const LoginLink = v.object({ url: v.string(), expires_at: field.Timestamp });
export type LoginLink = v.InferOutput<typeof LoginLink>;

/** redeem_login_link: the session token (ses_…) a login link became, answered this once, and when it expires. */
export const LoginSession = v.object({ token: v.string(), expires_at: field.Timestamp });
export type LoginSession = v.InferOutput<typeof LoginSession>;

/**
 * How a browser page signs a person in here, without a credential: the authorization-code flow with PKCE when an
 * authorization server is configured (null otherwise). The client id, the endpoint and the redirect URI are public
 * (they appear in the address bar); the client secret never leaves the service (the token exchange adds it).
 */
export const SignInMethods = v.object({
  authorization_code: v.nullable(
    v.object({
      authorization_endpoint: v.string(),
      client_id: v.string(),
      scope: v.string(),
      redirect_uri: v.string(),
    }),
  ),
  login_links: v.literal(true),
});
export type SignInMethods = v.InferOutput<typeof SignInMethods>;
