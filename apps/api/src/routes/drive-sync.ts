import * as v from 'valibot';
import { DRIVE_TYPES, requireDriveSync, startDriveSync } from '@wds/drive-sync';
import { assertStorageEditor } from '../http/permissions.js';
import { defineRoute } from '../http/route.js';
import { Uuid, boolQuery } from '../http/schemas.js';
import { DriveFileText, DrivePicker, DriveSyncConfig, DriveSyncRoot, DriveSyncStarted, DriveSyncStatus, File } from '../http/views/index.js';

/**
 * Drive sync (docs/providers.md#drive-sync): the workspace is `workspace_id` in the query (reads) or the body
 * (writes), and the caller must be a member. Reading state is for members; changing the configuration and the
 * roots is for admins; importing a file into storage is for storage editors.
 */
const base = '/api/v1/drive-sync';
const member = { auth: 'user', workspace: 'payload', role: 'member' } as const;
const admin = { auth: 'user', workspace: 'payload', role: 'admin' } as const;
const WorkspaceQuery = v.object({ workspace_id: Uuid });
const DriveId = v.pipe(v.string('must be a string'), v.nonEmpty('must not be empty'), v.maxLength(256));

export const driveSyncRoutes = [
  defineRoute({
    ...member,
    method: 'get',
    path: `${base}/status`,
    operation: 'get_drive_sync_status',
    response: DriveSyncStatus,
    summary: 'Sync state, roots, node count, last sync time and error',
    query: WorkspaceQuery,
    handler: (ctx) => requireDriveSync(ctx.services).status(ctx.access.workspace.id),
  }),
  defineRoute({
    ...member,
    method: 'get',
    path: `${base}/config`,
    operation: 'get_drive_sync_config',
    response: DriveSyncConfig,
    summary: 'Drive sync settings of the workspace',
    query: WorkspaceQuery,
    handler: (ctx) => requireDriveSync(ctx.services).getConfig(ctx.access.workspace.id),
  }),
  defineRoute({
    ...admin,
    method: 'put',
    path: `${base}/config`,
    operation: 'put_drive_sync_config',
    response: DriveSyncConfig,
    summary: 'Replace the drive sync settings: { workspace_id, include_shared_drives?, max_file_bytes? } (admins)',
    body: v.looseObject({ workspace_id: Uuid }),
    handler: async (ctx) => {
      const { workspace_id: _ws, ...settings } = ctx.body;
      return requireDriveSync(ctx.services).putConfig(ctx.access.workspace.id, settings);
    },
  }),
  defineRoute({
    ...member,
    method: 'get',
    path: `${base}/roots`,
    operation: 'list_drive_sync_roots',
    response: v.array(DriveSyncRoot),
    summary: 'The folders and drives that are synced',
    query: WorkspaceQuery,
    handler: (ctx) => requireDriveSync(ctx.services).listRoots(ctx.access.workspace.id),
  }),
  defineRoute({
    ...admin,
    method: 'post',
    path: `${base}/roots`,
    operation: 'add_drive_sync_root',
    response: DriveSyncRoot,
    summary: 'Add a root: { workspace_id, drive_id, drive_type: folder | shared_drive | my_drive, name, shared_drive_id? } (admins)',
    body: v.object({
      workspace_id: Uuid,
      drive_id: DriveId,
      drive_type: v.picklist(DRIVE_TYPES, `must be one of ${DRIVE_TYPES.join(', ')}`),
      name: v.pipe(v.string('must be a string'), v.trim(), v.nonEmpty('must not be empty'), v.maxLength(1024)),
      shared_drive_id: v.optional(v.nullable(DriveId)),
    }),
    status: 201,
    handler: async (ctx) => {
      const { workspace_id: _ws, shared_drive_id, ...rest } = ctx.body;
      const root = await requireDriveSync(ctx.services).addRoot(ctx.access.workspace.id, { ...rest, ...(shared_drive_id ? { shared_drive_id } : {}) });
      ctx.audit({ resourceId: root.id, details: { drive_id: root.drive_id, drive_type: root.drive_type } });
      return root;
    },
  }),
  defineRoute({
    ...admin,
    method: 'delete',
    path: `${base}/roots/:rootId`,
    operation: 'remove_drive_sync_root',
    summary: 'Remove a root and its synced nodes (admins)',
    query: WorkspaceQuery,
    status: 204,
    handler: async (ctx) => {
      await requireDriveSync(ctx.services).removeRoot(ctx.access.workspace.id, ctx.params.rootId);
      ctx.audit({ resourceId: ctx.params.rootId });
    },
  }),
  defineRoute({
    ...member,
    method: 'post',
    path: `${base}/sync`,
    operation: 'start_drive_sync',
    response: DriveSyncStarted,
    summary: 'Start a background sync and return at once ({ started: false } while one is queued or running); poll status',
    body: v.object({ workspace_id: Uuid }),
    status: 202,
    transaction: false,
    invalidates: 'none',
    handler: async (ctx) => {
      const services = ctx.services;
      const drive = requireDriveSync(services);
      const started = await startDriveSync(services, ctx.access.workspace.id);
      const status = await drive.status(ctx.access.workspace.id);
      return { started, state: status.state };
    },
  }),
  defineRoute({
    ...member,
    method: 'post',
    path: `${base}/materialize`,
    operation: 'materialize_drive_file',
    response: File,
    summary: 'Copy a drive file into storage (native documents exported as text); returns the stored file (storage editors)',
    body: v.object({ workspace_id: Uuid, drive_file_id: DriveId }),
    status: 201,
    transaction: false,
    invalidates: 'none',
    handler: async (ctx) => {
      await assertStorageEditor(ctx);
      const file = await requireDriveSync(ctx.services).materialize(ctx.access.workspace.id, ctx.body.drive_file_id, { userId: ctx.principal.user.id });
      ctx.audit({ resourceId: file.id, details: { drive_file_id: ctx.body.drive_file_id, filename: file.filename, size: file.size } });
      return file;
    },
  }),
  defineRoute({
    ...member,
    method: 'post',
    path: `${base}/read`,
    operation: 'read_drive_file',
    response: DriveFileText,
    summary: "A drive file's content as text (native documents exported), cut at max_bytes (default and limit 10 MiB)",
    body: v.object({
      workspace_id: Uuid,
      drive_file_id: DriveId,
      max_bytes: v.optional(v.pipe(v.number(), v.integer(), v.minValue(1), v.maxValue(10 * 1024 * 1024))),
    }),
    handler: (ctx) =>
      requireDriveSync(ctx.services).read(ctx.access.workspace.id, ctx.body.drive_file_id, {
        ...(ctx.body.max_bytes ? { maxBytes: ctx.body.max_bytes } : {}),
      }),
  }),
  defineRoute({
    ...member,
    method: 'get',
    path: `${base}/picker`,
    operation: 'drive_picker',
    response: DrivePicker,
    summary: 'Folders under a parent (default: My Drive root) and, with shared_drives=true (default: the include_shared_drives setting), the shared drives',
    query: v.object({
      workspace_id: Uuid,
      parent: v.optional(DriveId),
      shared_drives: boolQuery('must be true or false', true),
    }),
    handler: (ctx) =>
      requireDriveSync(ctx.services).picker(ctx.access.workspace.id, {
        ...(ctx.query.parent ? { parent: ctx.query.parent } : {}),
        // Not asked: the workspace's include_shared_drives setting decides.
        ...(ctx.query.shared_drives !== undefined ? { sharedDrives: ctx.query.shared_drives === 'true' || ctx.query.shared_drives === '1' } : {}),
      }),
  }),
];
