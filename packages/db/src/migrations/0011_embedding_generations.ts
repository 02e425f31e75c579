import { type Kysely, sql } from 'kysely';

/**
 * Semantic search on the embedded default (issue 16): API processes keep the chunk vectors of a workspace surface in
 * memory, while other processes (workers) write the chunks. Every statement that changes the chunks of a workspace
 * and surface, or the item columns a search filters on, bumps that surface's generation in the same transaction; a
 * search reads the generation (one primary-key lookup) and reloads its copy when it moved. A load reads the
 * generation and the chunks in one snapshot, so a copy at generation g holds exactly what was committed at g.
 *
 * Deleting a workspace removes its rows (the triggers leave out workspaces that are gone); a surface without a row
 * is searched in SQL. Existing surfaces get a row here.
 */
export async function up(db: Kysely<unknown>): Promise<void> {
  await sql`
    CREATE TABLE platform.embedding_generations (
      workspace_id uuid NOT NULL REFERENCES platform.workspaces(id) ON DELETE CASCADE,
      surface text NOT NULL,
      generation bigint NOT NULL,
      PRIMARY KEY (workspace_id, surface)
    );

    -- One bump per surface and transaction is enough (readers only see commits), so a surface this transaction
    -- already bumped is left alone: a statement changing many items writes its row once, not once per item. Keys
    -- are locked in a fixed order, so two transactions bumping the same two surfaces cannot deadlock; workspaces
    -- being deleted are left out.
    CREATE FUNCTION platform.bump_embedding_generations(workspace_ids uuid[], surfaces text[]) RETURNS void
      LANGUAGE plpgsql AS $fn$
    BEGIN
      -- (plpgsql rather than sql: it keeps the plan of this statement for the next call)
      INSERT INTO platform.embedding_generations AS g (workspace_id, surface, generation)
      SELECT DISTINCT k.workspace_id, k.surface, 1
        FROM unnest(workspace_ids, surfaces) AS k (workspace_id, surface)
       WHERE EXISTS (SELECT 1 FROM platform.workspaces w WHERE w.id = k.workspace_id)
         AND NOT EXISTS (SELECT 1 FROM platform.embedding_generations b
                          WHERE b.workspace_id = k.workspace_id AND b.surface = k.surface
                            AND b.xmin = pg_current_xact_id()::xid)
       ORDER BY 1, 2
      ON CONFLICT (workspace_id, surface) DO UPDATE SET generation = g.generation + 1;
    END
    $fn$;

    -- Chunks inserted, updated or deleted: their items give the surface. Chunks deleted with their item (a cascade)
    -- find no item any more; the item's own trigger bumps for them.
    CREATE FUNCTION platform.embedding_chunks_changed() RETURNS trigger LANGUAGE plpgsql AS $fn$
    BEGIN
      PERFORM platform.bump_embedding_generations(array_agg(k.workspace_id), array_agg(k.surface))
         FROM (SELECT DISTINCT c.workspace_id, i.surface FROM changed c JOIN platform.embedding_items i ON i.id = c.item_id) k;
      RETURN NULL;
    END
    $fn$;
    CREATE TRIGGER embedding_chunks_inserted AFTER INSERT ON platform.embedding_chunks
      REFERENCING NEW TABLE AS changed FOR EACH STATEMENT EXECUTE FUNCTION platform.embedding_chunks_changed();
    CREATE TRIGGER embedding_chunks_updated AFTER UPDATE ON platform.embedding_chunks
      REFERENCING NEW TABLE AS changed FOR EACH STATEMENT EXECUTE FUNCTION platform.embedding_chunks_changed();
    CREATE TRIGGER embedding_chunks_deleted AFTER DELETE ON platform.embedding_chunks
      REFERENCING OLD TABLE AS changed FOR EACH STATEMENT EXECUTE FUNCTION platform.embedding_chunks_changed();

    CREATE FUNCTION platform.embedding_items_deleted() RETURNS trigger LANGUAGE plpgsql AS $fn$
    BEGIN
      PERFORM platform.bump_embedding_generations(array_agg(k.workspace_id), array_agg(k.surface))
         FROM (SELECT DISTINCT workspace_id, surface FROM changed) k;
      RETURN NULL;
    END
    $fn$;
    CREATE TRIGGER embedding_items_deleted AFTER DELETE ON platform.embedding_items
      REFERENCING OLD TABLE AS changed FOR EACH STATEMENT EXECUTE FUNCTION platform.embedding_items_deleted();

    -- Only what a search filters on counts: status changes (claims, failures, resets) leave the copies as they are.
    -- A row trigger whose WHEN clause is false costs them nothing; a statement trigger would have to join its old and
    -- new rows, which the planner does by nested loop (minutes for 10k rows).
    CREATE FUNCTION platform.embedding_item_changed() RETURNS trigger LANGUAGE plpgsql AS $fn$
    BEGIN
      PERFORM platform.bump_embedding_generations(ARRAY[OLD.workspace_id, NEW.workspace_id], ARRAY[OLD.surface, NEW.surface]);
      RETURN NULL;
    END
    $fn$;
    CREATE TRIGGER embedding_item_changed AFTER UPDATE ON platform.embedding_items FOR EACH ROW
      WHEN ((OLD.workspace_id, OLD.surface, OLD.file_id, OLD.table_name, OLD.row_id, OLD.column_name, OLD.model)
            IS DISTINCT FROM (NEW.workspace_id, NEW.surface, NEW.file_id, NEW.table_name, NEW.row_id, NEW.column_name, NEW.model))
      EXECUTE FUNCTION platform.embedding_item_changed();

    INSERT INTO platform.embedding_generations (workspace_id, surface, generation)
    SELECT DISTINCT c.workspace_id, i.surface, 1
      FROM platform.embedding_chunks c JOIN platform.embedding_items i ON i.id = c.item_id
      JOIN platform.workspaces w ON w.id = c.workspace_id;
  `.execute(db);
}

export async function down(db: Kysely<unknown>): Promise<void> {
  await sql`
    DROP TRIGGER embedding_item_changed ON platform.embedding_items;
    DROP TRIGGER embedding_items_deleted ON platform.embedding_items;
    DROP TRIGGER embedding_chunks_deleted ON platform.embedding_chunks;
    DROP TRIGGER embedding_chunks_updated ON platform.embedding_chunks;
    DROP TRIGGER embedding_chunks_inserted ON platform.embedding_chunks;
    DROP FUNCTION platform.embedding_item_changed();
    DROP FUNCTION platform.embedding_items_deleted();
    DROP FUNCTION platform.embedding_chunks_changed();
    DROP FUNCTION platform.bump_embedding_generations(uuid[], text[]);
    DROP TABLE platform.embedding_generations;
  `.execute(db);
}
