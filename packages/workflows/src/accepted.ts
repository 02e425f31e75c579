/**
 * The versions a run runs (issue 28). Any workflow editor may add a version to any STF or effect, and a run carries
 * its user's rows (a Table input step reads with their policies, `sql()` too): so an unpinned step never runs a
 * version another editor added without anyone accepting it. Every run — by hand, async, or a schedule's, hook's or
 * trigger's as its owner — runs each unpinned step at the version that was newest when its workflow was last saved
 * (`workflows.accepted_versions`), or at a newer one its own user wrote. Whoever saves the workflow when newer
 * versions exist accepts them and takes its automation over, as whoever changes its steps does. An async run keeps
 * the versions of the moment it was asked for and a digest of its steps: if the steps differ when it starts
 * (someone changed them), it does not run.
 */
import { createHash } from 'node:crypto';
import type { Db } from '@wds/db';
import type { WorkflowDefinition } from './definition.js';
import { newestVersions, ownNewestVersions } from './resolve.js';

/** Stored as `accepted_versions` (migration 0019). */
export interface AcceptedVersions {
  /** For each unpinned step's referenced version: the version it runs. A reference missing here runs as named. */
  stf: Record<string, string>;
  effect: Record<string, string>;
  /** An async run's: definitionDigest of the steps it was asked for. (A workflow's own sit in the same row as its steps.) */
  definition?: string;
}

/** Every step at exactly the version its workflow names (what row triggers ran before versions were accepted). */
export const AS_NAMED: AcceptedVersions = Object.freeze({ stf: Object.freeze({}), effect: Object.freeze({}) }) as AcceptedVersions;

/** JSON with every object's keys sorted: the same definition gives the same text however its keys were ordered. */
function canonical(value: unknown): string {
  if (Array.isArray(value)) return `[${value.map(canonical).join(',')}]`;
  if (value !== null && typeof value === 'object') {
    const entries = Object.entries(value as Record<string, unknown>).filter(([, v]) => v !== undefined);
    entries.sort(([a], [b]) => (a < b ? -1 : a > b ? 1 : 0));
    return `{${entries.map(([k, v]) => `${JSON.stringify(k)}:${canonical(v)}`).join(',')}}`;
  }
  return JSON.stringify(value) ?? 'null';
}

/** A digest of what a workflow runs: its input schema and its steps (not its name or description). */
export function definitionDigest(def: WorkflowDefinition): string {
  const steps = { input_schema: def.input_schema ?? null, input_steps: def.input_steps, stf_steps: def.stf_steps, effect_steps: def.effect_steps };
  return createHash('sha256').update(canonical(steps)).digest('hex');
}

/** What accepting `def` now means: the newest version of each unpinned step's STF or effect, and the steps' digest. */
export async function acceptedVersions(db: Db, workspaceId: string, def: WorkflowDefinition): Promise<AcceptedVersions> {
  const [stf, effect] = await Promise.all([
    newestVersions(db, 'stf', workspaceId, def.stf_steps.filter((s) => s.pin_version !== true).map((s) => s.stf_version_id)),
    newestVersions(db, 'effect', workspaceId, def.effect_steps.filter((s) => s.pin_version !== true).map((s) => s.effect_version_id)),
  ]);
  return { stf, effect, definition: definitionDigest(def) };
}

/**
 * The versions a run `userId` asks for now runs (null: anonymous): for each unpinned step, the version the workflow's
 * last save accepted (`accepted`), or a newer one of the same STF or effect that user wrote; and the steps' digest.
 */
export async function requestedVersions(
  db: Db,
  workspaceId: string,
  def: WorkflowDefinition,
  accepted: AcceptedVersionsView | null,
  userId: string | null,
): Promise<AcceptedVersions> {
  const base = (refs: string[], map: Record<string, string> | undefined) =>
    Object.fromEntries(refs.map((r) => [r, map && Object.hasOwn(map, r) ? (map[r] as string) : r]));
  const [stf, effect] = await Promise.all([
    ownNewestVersions(db, 'stf', workspaceId, base(def.stf_steps.filter((s) => s.pin_version !== true).map((s) => s.stf_version_id), accepted?.stf), userId),
    ownNewestVersions(db, 'effect', workspaceId, base(def.effect_steps.filter((s) => s.pin_version !== true).map((s) => s.effect_version_id), accepted?.effect), userId),
  ]);
  return { stf, effect, definition: definitionDigest(def) };
}

const isIdMap = (v: unknown): v is Record<string, string> =>
  v !== null && typeof v === 'object' && !Array.isArray(v) && Object.values(v).every((id) => typeof id === 'string');

/** A stored `accepted_versions`; null when there is none (or it is not one). */
export function storedAccepted(value: unknown): AcceptedVersions | null {
  if (value === null || typeof value !== 'object') return null;
  const { stf, effect, definition } = value as Record<string, unknown>;
  if (!isIdMap(stf) || !isIdMap(effect)) return null;
  return { stf, effect, ...(typeof definition === 'string' ? { definition } : {}) };
}

/** What a workflow shows of what its automation runs: the versions, not the digest. */
export type AcceptedVersionsView = Pick<AcceptedVersions, 'stf' | 'effect'>;
export function acceptedVersionsView(value: unknown): AcceptedVersionsView | null {
  const a = storedAccepted(value);
  return a ? { stf: a.stf, effect: a.effect } : null;
}

const sameMap = (a: Record<string, string>, b: Record<string, string>) =>
  Object.keys(a).length === Object.keys(b).length && Object.entries(a).every(([k, v]) => Object.hasOwn(b, k) && b[k] === v);

/** Whether two acceptances bind every reference alike (null: each as named, i.e. an empty map). */
export function sameVersions(a: AcceptedVersionsView | null, b: AcceptedVersionsView | null): boolean {
  return sameMap(a?.stf ?? {}, b?.stf ?? {}) && sameMap(a?.effect ?? {}, b?.effect ?? {});
}

/** The steps of `def` as `accepted` binds them: each pinned, to its own version if pinned, else to the one accepted. */
export function boundSteps(def: Pick<WorkflowDefinition, 'stf_steps' | 'effect_steps'>, accepted: AcceptedVersions): Pick<WorkflowDefinition, 'stf_steps' | 'effect_steps'> {
  const bind = (id: string, pinned: boolean | undefined, map: Record<string, string>) => (pinned === true ? id : (Object.hasOwn(map, id) ? (map[id] as string) : id));
  return {
    stf_steps: def.stf_steps.map((s) => ({ ...s, stf_version_id: bind(s.stf_version_id, s.pin_version, accepted.stf), pin_version: true })),
    effect_steps: def.effect_steps.map((s) => ({ ...s, effect_version_id: bind(s.effect_version_id, s.pin_version, accepted.effect), pin_version: true })),
  };
}
