import { type Kysely, sql } from 'kysely';

/**
 * One-time login links (issue 31): an operator (admin interface or CLI) hands a user a link whose code, redeemed once
 * within 15 minutes, becomes a session token. Only the SHA-256 of the code is kept, as for session tokens and API
 * keys, so a copy of the database signs no one in. `used_at` is set by the one UPDATE that redeems a link (`used_at
 * IS NULL AND expires_at > now()`), so two redemptions racing for one code give one session.
 */
export async function up(db: Kysely<unknown>): Promise<void> {
  await sql`
    CREATE TABLE platform.login_links (
      id uuid PRIMARY KEY,
      user_id uuid NOT NULL REFERENCES platform.users(id) ON DELETE CASCADE,
      code_hash text NOT NULL UNIQUE,
      created_at timestamptz NOT NULL DEFAULT now(),
      expires_at timestamptz NOT NULL,
      used_at timestamptz,
      created_by text NOT NULL CHECK (created_by IN ('admin', 'cli'))
    );
    CREATE INDEX login_links_user_id_idx ON platform.login_links (user_id);
  `.execute(db);
}

export async function down(db: Kysely<unknown>): Promise<void> {
  await sql`DROP TABLE platform.login_links`.execute(db);
}
