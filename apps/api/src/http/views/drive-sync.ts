import { ConfigView, RootView, StatusView } from '@wds/drive-sync';
import * as v from 'valibot';

/** The views of drive sync: configuration, roots and state (@wds/drive-sync owns them), and single Drive files. */
export { ConfigView as DriveSyncConfig, RootView as DriveSyncRoot, StatusView as DriveSyncStatus };

/** A Drive id (file, folder, shared drive, or the alias `root`): not a UUID. */
const DriveId = v.string();
/** A Drive folder or shared drive as the picker lists it. */
const DriveItem = v.object({ id: DriveId, name: v.string() });

/** start_drive_sync: whether this call queued a sync (false while one is queued or running), and the state now. */
export const DriveSyncStarted = v.object({ started: v.boolean(), state: StatusView.entries.state });
/** read_drive_file: a Drive file's text (native documents exported), cut at max_bytes (ReadResult). */
export const DriveFileText = v.object({
  id: DriveId,
  name: v.string(),
  mime_type: v.string(),
  content: v.string(),
  /** The content was cut at max_bytes (at a UTF-8 character boundary). */
  truncated: v.boolean(),
});
/** drive_picker: folders under the parent, sorted by name, and the shared drives when asked for (PickerResult). */
export const DrivePicker = v.object({
  folders: v.array(DriveItem),
  /** Only with shared_drives=true. */
  shared_drives: v.optional(v.array(DriveItem)),
});
