/**
 * What a workflow's shape cannot say, checked when it is saved: each step names an STF or effect version of this
 * workspace, input step names are unique, a Library source names a bundled library (or, as before, a table),
 * variables have a known root (the `$` forms or their legacy aliases, variables.ts) and refer only to earlier
 * steps and to defined sources. Problems are listed together in one 400 VALIDATION_ERROR.
 */
import type { Db } from '@wds/db';
import { isUuid } from '@wds/db';
import { newestEffectVersions } from '@wds/effects';
import { validationError } from '@wds/errors';
import { isLogicalName } from '@wds/sql-rewriter';
import { newestStfVersions } from '@wds/stfs';
import type { FieldMapping, WorkflowDefinition } from './definition.js';
import { bundledLibraryNames, isBundledLibrary } from './libraries.js';
import { parseVariable, UNSAFE_KEYS } from './variables.js';

function checkMappings(where: string, mappings: FieldMapping[], sources: Set<string>, stepsBefore: number, problems: string[]) {
  mappings.forEach((m, i) => {
    const at = `${where}.input_mappings[${i}]`;
    if (m.target.split('.').some((k) => UNSAFE_KEYS.has(k))) problems.push(`${at}.target: ${JSON.stringify(m.target)} is not allowed`);
    if (m.source.type !== 'Variable') return;
    const root = parseVariable(m.source.value);
    if ('error' in root) problems.push(`${at}: ${root.error}`);
    else if (root.kind === 'sources' && !sources.has(root.name)) problems.push(`${at}: no input step is named ${JSON.stringify(root.name)}`);
    else if (root.kind === 'steps' && root.index >= stepsBefore) {
      problems.push(`${at}: $steps[${root.index}] is not an earlier STF step (${stepsBefore === 0 ? 'there is none' : `use 0..${stepsBefore - 1}`})`);
    }
  });
}

export async function checkDefinition(db: Db, workspaceId: string, def: WorkflowDefinition): Promise<void> {
  const problems: string[] = [];
  const sources = new Set<string>();
  def.input_steps.forEach((step, i) => {
    if (sources.has(step.name)) problems.push(`input_steps[${i}].name: ${JSON.stringify(step.name)} is used twice`);
    sources.add(step.name);
    const src = step.source;
    if (src.type === 'Fetch' && !/^https?:\/\//i.test(src.url)) problems.push(`input_steps[${i}].source.url: must be http or https`);
    // A Library is a bundled library; a name that is none but a table name is the table (read as `Table`, noted in
    // the run record), so definitions saved when `Library` meant a table keep working.
    if (src.type === 'Library' && !isBundledLibrary(src.name) && !isLogicalName(src.name)) {
      problems.push(
        `input_steps[${i}].source.name: ${JSON.stringify(src.name)} is not a bundled library (${bundledLibraryNames().join(', ')}, also as @d6e-ai/<name>); a workspace table is { "type": "Table", "name": … }`,
      );
    }
  });
  const fileIds = def.input_steps.flatMap((s) => (s.source.type === 'File' ? [s.source.id] : []));
  if (fileIds.length > 0) {
    const valid = fileIds.filter(isUuid);
    const found = new Set(
      valid.length === 0
        ? []
        : (
        await db
          .selectFrom('platform.files')
          .select('id')
          .where('workspace_id', '=', workspaceId)
          .where('deleted_at', 'is', null)
          .where('id', 'in', valid)
          .execute()
      ).map((r) => r.id),
    );
    def.input_steps.forEach((step, i) => {
      if (step.source.type === 'File' && !found.has(step.source.id)) problems.push(`input_steps[${i}].source.id: no file ${step.source.id} in this workspace`);
    });
  }
  // A version of this workspace whose STF (or effect) lives is exactly one that has a newest version.
  const stfs = new Set(Object.keys(await newestStfVersions(db, workspaceId, def.stf_steps.map((s) => s.stf_version_id))));
  def.stf_steps.forEach((step, i) => {
    if (!stfs.has(step.stf_version_id)) problems.push(`stf_steps[${i}].stf_version_id: no STF version ${step.stf_version_id} in this workspace`);
    checkMappings(`stf_steps[${i}]`, step.input_mappings, sources, i, problems);
  });
  const effects = new Set(Object.keys(await newestEffectVersions(db, workspaceId, def.effect_steps.map((s) => s.effect_version_id))));
  def.effect_steps.forEach((step, i) => {
    if (!effects.has(step.effect_version_id)) {
      problems.push(`effect_steps[${i}].effect_version_id: no effect version ${step.effect_version_id} in this workspace`);
    }
    checkMappings(`effect_steps[${i}]`, step.input_mappings, sources, def.stf_steps.length, problems);
  });
  if (problems.length > 0) throw validationError(problems.join('; '));
}
