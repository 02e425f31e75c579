import { field } from '@wds/db';
import * as v from 'valibot';
export { RuntimeNameView as RuntimeName } from '@wds/stfs';

/** The pieces the views of apps/api's own answers are made of (the packages' views are made of the same: @wds/db `field`). */
export const { Uuid, Role, Timestamp, Integer, NonNegative, JsonObject } = field;
export const StatementKind = v.picklist(['select', 'insert', 'update', 'delete', 'ddl']);
