import type * as v from 'valibot';
import * as core from './core.js';
import * as embeddings from './embeddings.js';
import * as setup from './setup.js';
import * as audit from './audit.js';
import * as admin from './admin.js';
import * as driveSync from './drive-sync.js';
import * as saasProxy from './saas-proxy.js';

/**
 * The success bodies of operations (RouteDef.response): what the handlers answer, as valibot schemas. The OpenAPI
 * document states each named one (VIEWS) once as a component and refers to it; the test harness validates real
 * answers against them (test/support.ts). Derived from the packages' view types (toWorkspaceView, PolicyView, …):
 * objects are open (a field added later is no break), every field a handler always sends is required. One file per
 * area; every export of an area's file is a named view.
 */
export * from './core.js';
export * from './embeddings.js';
export * from './setup.js';
export * from './audit.js';
export * from './admin.js';
export * from './drive-sync.js';
export * from './saas-proxy.js';

/** The named views: each a component of the OpenAPI document (#/components/schemas/<name>). */
export const VIEWS: Record<string, v.GenericSchema> = {
  ...core,
  ...embeddings,
  ...setup,
  ...audit,
  ...admin,
  ...driveSync,
  ...saasProxy,
};
