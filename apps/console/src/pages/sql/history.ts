/**
 * The statements of this tab's session, newest first, per workspace: sessionStorage only (closing the tab forgets
 * them, like the token), at most 50.
 */
export interface HistoryEntry {
  sql: string;
  /** ISO time it ran. */
  at: string;
  /** What it gave, as a person reads it: "3 rows", "EXECUTION_ERROR", "waits for approval". */
  outcome: string;
}

const MAX = 50;
const key = (workspaceId: string) => `wds.sql.history.${workspaceId}`;

export function readHistory(workspaceId: string): HistoryEntry[] {
  try {
    const list = JSON.parse(sessionStorage.getItem(key(workspaceId)) ?? '[]') as unknown;
    return Array.isArray(list) ? list.filter((e): e is HistoryEntry => typeof e?.sql === 'string' && typeof e?.at === 'string' && typeof e?.outcome === 'string') : [];
  } catch {
    return [];
  }
}

export function addToHistory(workspaceId: string, entry: HistoryEntry): HistoryEntry[] {
  const list = [entry, ...readHistory(workspaceId)].slice(0, MAX);
  try {
    sessionStorage.setItem(key(workspaceId), JSON.stringify(list));
  } catch {
    // Storage full or refused: the history lives on this page only.
  }
  return list;
}

export function clearHistory(workspaceId: string): void {
  sessionStorage.removeItem(key(workspaceId));
}

/** The statement being written, kept across page changes in this tab. */
export const readDraft = (workspaceId: string): string | null => sessionStorage.getItem(`wds.sql.draft.${workspaceId}`);
export const saveDraft = (workspaceId: string, sql: string): void => {
  try {
    sessionStorage.setItem(`wds.sql.draft.${workspaceId}`, sql);
  } catch {
    // As above.
  }
};
