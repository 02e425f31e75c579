import {
  createDocument,
  DOCUMENT_LIMITS,
  getDocument,
  listDocuments,
  listDocumentVersions,
  replaceDocumentSection,
  softDeleteDocument,
  updateDocument,
} from '@wds/documents';
import { documentChanged, emitWorkflowEvents } from '@wds/workflows';
import * as v from 'valibot';
import { assertWorkflowEditor } from '../http/permissions.js';
import type { MemberCtx } from '../http/route.js';
import { defineRoute } from '../http/route.js';
import { Document, DocumentSummary, DocumentVersion } from '../http/views/index.js';
import { intQuery, pageEntries, withJsonSchema } from '../http/schemas.js';

/** The document_changed event of a change, written in the change's own transaction (the route's). */
const changed = (ctx: MemberCtx, action: 'created' | 'updated' | 'deleted', doc: Parameters<typeof documentChanged>[1]) =>
  emitWorkflowEvents(ctx.db, ctx.services.config, documentChanged(action, doc));

const base = '/api/v1/workspaces/:id/documents';
// Documents are workspace content, not access state: nothing cached goes stale when they change.
// docs/http-api.md#where-the-workspace-comes-from: the workspace of /workspaces/{id}/documents/* comes from
// X-Workspace-ID (required); the path id is ignored.
const common = { auth: 'user', workspace: 'header', role: 'member', invalidates: 'none' } as const;

// NUL and unpaired surrogates, which PostgreSQL cannot store, are refused for every JSON body (http/input.ts).
const isObject = (x: unknown): x is Record<string, unknown> => typeof x === 'object' && x !== null && !Array.isArray(x);

const Title = v.pipe(
  v.string('must be a string'),
  v.trim(),
  v.minLength(1, 'must not be empty'),
  v.maxLength(DOCUMENT_LIMITS.titleChars, `at most ${DOCUMENT_LIMITS.titleChars} characters`),
);
const Label = v.pipe(
  v.string('must be a string'),
  v.trim(),
  v.minLength(1, 'must not be empty'),
  v.maxLength(DOCUMENT_LIMITS.labelChars, `at most ${DOCUMENT_LIMITS.labelChars} characters`),
);
const Content = v.pipe(
  v.string('must be a string (Markdown)'),
  withJsonSchema(v.maxBytes(DOCUMENT_LIMITS.contentBytes, `at most ${DOCUMENT_LIMITS.contentBytes} bytes of UTF-8 text`), {
    description: `at most ${DOCUMENT_LIMITS.contentBytes} bytes of UTF-8 text`,
  }),
);
const Metadata = v.optional(
  v.nullable(
    v.pipe(
      withJsonSchema(v.custom<Record<string, unknown>>(isObject, 'must be a JSON object'), { type: 'object', additionalProperties: {} }),
      withJsonSchema(
        v.check<Record<string, unknown>, string>(
          (m) => Buffer.byteLength(JSON.stringify(m)) <= DOCUMENT_LIMITS.metadataBytes,
          `at most ${DOCUMENT_LIMITS.metadataBytes} bytes as JSON`,
        ),
        { description: `at most ${DOCUMENT_LIMITS.metadataBytes} bytes as JSON` },
      ),
    ),
  ),
);

/** A missing field says `required` (valibot's default names the expected key), a non-object body says so. */
const bodyMessage = (issue: { expected: string | null }) =>
  issue.expected === 'Object' ? 'the body must be a JSON object' : issue.expected === 'never' ? 'unknown field' : 'required';

const CreateDocument = v.object({ title: Title, doc_type: Label, status: Label, content: Content, metadata: Metadata }, bodyMessage);
const PatchDocument = v.strictObject(
  {
    title: v.optional(Title),
    doc_type: v.optional(Label),
    status: v.optional(Label),
    content: v.optional(Content),
    metadata: Metadata,
  },
  bodyMessage,
);
const ListQuery = v.object({ ...pageEntries, doc_type: v.optional(Label), status: v.optional(Label) });

// Each version carries its content (up to 5 MiB), so a page of versions is smaller than other lists.
const VERSIONS_PAGE = { default: 20, max: 50 };
const VersionsQuery = v.object({
  limit: intQuery(VERSIONS_PAGE.default, 1, VERSIONS_PAGE.max, 'limit'),
  offset: pageEntries.offset,
});

/** A section replacement: heading with content, or old_text with new_text (the check of its route). */
const SectionReplacement = v.strictObject({
  heading: v.optional(v.pipe(v.string(), v.trim(), v.minLength(1, 'must not be empty'), v.maxLength(DOCUMENT_LIMITS.titleChars))),
  content: v.optional(Content),
  old_text: v.optional(Content),
  new_text: v.optional(Content),
});

export const documentRoutes = [
  defineRoute({
    ...common,
    method: 'get',
    path: base,
    operation: 'list_documents',
    response: v.array(DocumentSummary),
    summary: 'Documents of the workspace in creation order, without content; filters doc_type and status match exactly',
    query: ListQuery,
    handler: ({ db, access, query }) => listDocuments(db, access.workspace.id, query),
  }),
  defineRoute({
    ...common,
    method: 'post',
    path: base,
    operation: 'create_document',
    response: Document,
    summary: 'Create a Markdown document { title, doc_type, status, content, metadata? } at version 1 (workflow editors)',
    body: CreateDocument,
    status: 201,
    handler: async (ctx) => {
      await assertWorkflowEditor(ctx);
      const doc = await createDocument(ctx.db, ctx.access.workspace.id, { ...ctx.body, createdBy: ctx.principal.user.id });
      ctx.audit({ resourceId: doc.id, details: { title: doc.title, doc_type: doc.doc_type, status: doc.status, version: doc.version } });
      await changed(ctx, 'created', doc);
      return doc;
    },
  }),
  defineRoute({
    ...common,
    method: 'get',
    path: `${base}/:docId`,
    operation: 'get_document',
    response: Document,
    summary: 'A document with its content',
    handler: ({ db, access, params }) => getDocument(db, access.workspace.id, params.docId),
  }),
  defineRoute({
    ...common,
    method: 'patch',
    path: `${base}/:docId`,
    operation: 'update_document',
    response: Document,
    summary: 'Change title, doc_type, status, content or metadata (workflow editors); a content change adds a version',
    body: PatchDocument,
    handler: async (ctx) => {
      await assertWorkflowEditor(ctx);
      const { document, versionAdded } = await updateDocument(
        ctx.db,
        ctx.access.workspace.id,
        ctx.params.docId,
        ctx.body,
        ctx.principal.user.id,
      );
      ctx.audit({
        resourceId: document.id,
        details: { changed: Object.keys(ctx.body), version: document.version, version_added: versionAdded },
      });
      await changed(ctx, 'updated', document);
      return document;
    },
  }),
  defineRoute({
    ...common,
    method: 'delete',
    path: `${base}/:docId`,
    operation: 'delete_document',
    summary: 'Soft-delete a document (workflow editors)',
    status: 204,
    handler: async (ctx) => {
      await assertWorkflowEditor(ctx);
      const doc = await softDeleteDocument(ctx.db, ctx.access.workspace.id, ctx.params.docId);
      ctx.audit({ resourceId: doc.id, details: { title: doc.title } });
      await changed(ctx, 'deleted', doc);
    },
  }),
  defineRoute({
    ...common,
    method: 'get',
    path: `${base}/:docId/versions`,
    operation: 'list_document_versions',
    response: v.array(DocumentVersion),
    summary: `Version snapshots of a document with their content, newest first (limit default ${VERSIONS_PAGE.default}, at most ${VERSIONS_PAGE.max})`,
    query: VersionsQuery,
    handler: ({ db, access, params, query }) => listDocumentVersions(db, access.workspace.id, params.docId, query),
  }),
  defineRoute({
    ...common,
    method: 'post',
    path: `${base}/:docId/replace-section`,
    operation: 'replace_document_section',
    response: Document,
    summary:
      'Replace one section of the content (workflow editors): the body under `heading` up to the next heading of its level or above, or `old_text` (exactly one occurrence) with `new_text`; adds a version like a content change',
    body: v.pipe(
      SectionReplacement,
      withJsonSchema(
        v.check<v.InferOutput<typeof SectionReplacement>, string>(
          (b) => (b.heading !== undefined && b.content !== undefined && b.old_text === undefined && b.new_text === undefined) || (b.old_text !== undefined && b.new_text !== undefined && b.heading === undefined && b.content === undefined),
          'give heading with content, or old_text with new_text',
        ),
        {
          // The other pair is absent: a property whose schema is `false` cannot be present.
          oneOf: [
            { required: ['heading', 'content'], properties: { old_text: false, new_text: false } },
            { required: ['old_text', 'new_text'], properties: { heading: false, content: false } },
          ],
        },
      ),
    ),
    handler: async (ctx) => {
      await assertWorkflowEditor(ctx);
      const b = ctx.body;
      const target = b.heading !== undefined ? { heading: b.heading, content: b.content ?? '' } : { old_text: b.old_text ?? '', new_text: b.new_text ?? '' };
      const { document, versionAdded } = await replaceDocumentSection(ctx.db, ctx.access.workspace.id, ctx.params.docId, target, ctx.principal.user.id);
      ctx.audit({
        resourceId: document.id,
        details: { changed: ['content'], by: b.heading !== undefined ? 'heading' : 'old_text', version: document.version, version_added: versionAdded },
      });
      await changed(ctx, 'updated', document);
      return document;
    },
  }),
];
