import { type Db, newId, type Transaction, type Database, type User } from '@wds/db';
import { conflict, validationError } from '@wds/errors';
import type { PublicUser } from './views.js';

type Conn = Db | Transaction<Database>;

export const toPublicUser = (u: Pick<User, 'id' | 'email' | 'name'>): PublicUser => ({
  id: u.id,
  email: u.email,
  name: u.name,
});

/** Called inside the transaction that creates a user, e.g. to turn pending invitations into memberships. */
export type OnUserCreated = (tx: Transaction<Database>, user: User) => Promise<unknown>;

const EMAIL = /^[^\s@]+@[^\s@]+\.[^\s@]+$/;
export const isEmail = (s: string): boolean => s.length <= 320 && EMAIL.test(s);

/** By email, ignoring case as the unique index does: PostgreSQL's lower() on both sides, never JavaScript's. */
export async function findUserByEmail(db: Conn, email: string): Promise<User | undefined> {
  return db
    .selectFrom('platform.users')
    .selectAll()
    .where((eb) => eb(eb.fn('lower', ['email']), '=', eb.fn('lower', [eb.val(email)])))
    .executeTakeFirst();
}

export async function getUser(db: Conn, id: string): Promise<User | undefined> {
  return db.selectFrom('platform.users').selectAll().where('id', '=', id).executeTakeFirst();
}

export async function createUser(
  db: Db,
  input: { email: string; name: string; jwtSubject?: string },
  onCreated?: OnUserCreated,
): Promise<User> {
  if (!isEmail(input.email)) throw validationError('email: must be an email address');
  return db.transaction().execute(async (tx) => {
    if (await findUserByEmail(tx, input.email)) throw conflict('A user with this email already exists');
    const user = await tx
      .insertInto('platform.users')
      .values({ id: newId(), email: input.email, name: input.name, jwt_subject: input.jwtSubject ?? null })
      .returningAll()
      .executeTakeFirstOrThrow();
    if (onCreated) await onCreated(tx, user);
    return user;
  });
}
