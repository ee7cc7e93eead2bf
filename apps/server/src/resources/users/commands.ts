import { hashPassword, verifyPassword } from '../../auth/password.js';
import type { Role } from '../../auth/permissions.js';
import { EMAIL } from '../../config.js';
import { invalidInput, notFound, ServerError } from '../../errors/server-error.js';
import { isUniqueViolation, type Db } from '../../store/tx.js';
import type { Command } from '../unit-of-work.js';
import { deleteUser, getUser, getUserWithHash, insertUser, lockAdmins, setUserRole, updateUser, type UserRecord } from './queries.js';

export interface NewUser {
  email: string;
  passwordHash: string;
  role: Role;
  displayName: string;
}

/**
 * Checks a new user and hashes the password (scrypt: slow, so before the unit of work and
 * never inside its transaction).
 */
export async function prepareNewUser(body: { email: string; password: string; role: Role; display_name?: string | undefined }): Promise<NewUser> {
  if (!EMAIL.test(body.email)) throw invalidInput('email', 'not an email address');
  return { email: body.email, passwordHash: await hashPassword(body.password), role: body.role, displayName: body.display_name ?? '' };
}

/** POST /users: emails are unique service-wide (409). */
export const createUser: Command<NewUser, UserRecord> = async (uow, u) => {
  let user: UserRecord;
  try {
    user = await insertUser(uow.trx, { tenantId: uow.tenant, email: u.email, displayName: u.displayName, role: u.role, passwordHash: u.passwordHash });
  } catch (error) {
    if (isUniqueViolation(error)) throw new ServerError('CONFLICT', 'email: a user with this email already exists');
    throw error;
  }
  await uow.audit({ action: 'user.create', target: `user:${user.id}`, detail: { email: user.email, role: user.role } });
  return user;
};

/** DELETE /users/{id}: their sessions go with them (ON DELETE CASCADE); nobody deletes themselves. */
export const removeUser: Command<{ id: string; callerUserId: string | null }, void> = async (uow, { id, callerUserId }) => {
  if (id === callerUserId) throw new ServerError('CONFLICT', 'id: you cannot delete yourself');
  const user = await deleteUser(uow.trx, uow.tenant, id);
  if (!user) throw notFound(`user ${id}`);
  await uow.audit({ action: 'user.delete', target: `user:${user.id}`, detail: { email: user.email } });
};

/**
 * PATCH /users/{id} `{role}`. A tenant keeps at least one admin: demoting the last one is a
 * 409 naming that rule (the admins are counted under their row locks). The same role again
 * changes nothing and writes no audit row.
 */
export const changeUserRole: Command<{ id: string; role: Role }, UserRecord> = async (uow, { id, role }) => {
  const admins = await lockAdmins(uow.trx, uow.tenant);
  const user = await getUser(uow.trx, uow.tenant, id);
  if (!user) throw notFound(`user ${id}`);
  if (user.role === role) return user;
  if (user.role === 'admin' && admins.length <= 1) {
    throw new ServerError('CONFLICT', `role: ${user.email} is the last admin of the tenant; a tenant keeps at least one admin (make another user admin first)`);
  }
  const updated = (await setUserRole(uow.trx, uow.tenant, id, role))!;
  await uow.audit({ action: 'user.role.change', target: `user:${user.id}`, detail: { email: user.email, from: user.role, to: role } });
  return updated;
};

export interface ProfilePatch {
  userId: string;
  display_name?: string;
  password_hash?: string;
}

/**
 * The checks of PATCH /profile and the new password's hash, before the unit of work (scrypt
 * twice: never inside a transaction). A stolen session alone must not be enough to take over
 * the account, so a new password needs the current one.
 */
export async function prepareProfilePatch(
  db: Db,
  tenantId: string,
  userId: string,
  body: { display_name?: string | undefined; current_password?: string | undefined; new_password?: string | undefined },
): Promise<ProfilePatch> {
  const patch: ProfilePatch = { userId };
  if (body.display_name !== undefined) patch.display_name = body.display_name;
  if (body.new_password !== undefined) {
    const user = await getUserWithHash(db, tenantId, userId);
    if (!user) throw notFound('user');
    if (body.current_password === undefined || !(await verifyPassword(body.current_password, user.password_hash))) {
      throw invalidInput('current_password', 'required and must match to set new_password');
    }
    patch.password_hash = await hashPassword(body.new_password);
  }
  if (patch.display_name === undefined && patch.password_hash === undefined) throw invalidInput('body', 'nothing to update (display_name or new_password)');
  return patch;
}

/** PATCH /profile: the caller's display name and/or password. */
export const updateProfile: Command<ProfilePatch, UserRecord> = async (uow, { userId, ...patch }) => {
  const user = await updateUser(uow.trx, uow.tenant, userId, patch);
  if (!user) throw notFound('user');
  await uow.audit({
    action: 'profile.update',
    target: `user:${user.id}`,
    detail: { fields: Object.keys(patch).map((k) => (k === 'password_hash' ? 'password' : k)) },
  });
  return user;
};
