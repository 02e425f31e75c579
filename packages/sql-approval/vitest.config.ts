import { defineConfig } from 'vitest/config';

// The package's own tests are of its pure rules; what touches the database is tested through the API
// (apps/api/test/sql-approval.test.ts), where the routes, the rewriter and the audit log are real.
export default defineConfig({ test: {} });
