import { describe, expect, it } from 'vitest';
import { type Proposer, type StatementNature, isAgent, needsApproval } from '../src/modes.js';
import { statusOf } from '../src/views.js';

const session: Proposer = { userId: 'u', credential: 'session', apiKeyId: null, viaMcp: false };
const jwt: Proposer = { ...session, credential: 'jwt' };
const key: Proposer = { ...session, credential: 'api_key', apiKeyId: 'k' };
const mcp: Proposer = { ...session, viaMcp: true };

const read: StatementNature = { operation: 'select', writes: false };
const writingRead: StatementNature = { operation: 'select', writes: true };
const insert: StatementNature = { operation: 'insert', writes: true };
const ddl: StatementNature = { operation: 'ddl', writes: true };

describe('which statements wait for approval', () => {
  it('agents are API keys and MCP sessions, whatever credential an MCP session carries', () => {
    expect([session, jwt, key, mcp].map(isAgent)).toEqual([false, false, true, true]);
  });

  it('every mode, both scopes, every kind of statement', () => {
    const table: [string, string, Proposer, StatementNature, boolean][] = [];
    for (const mode of ['none', 'write_only', 'ddl_only', 'all'] as const) {
      for (const scope of ['agents', 'everyone'] as const) {
        for (const proposer of [session, key]) {
          for (const s of [read, writingRead, insert, ddl]) {
            table.push([mode, scope, proposer, s, needsApproval({ sql_approval_mode: mode, sql_approval_applies_to: scope }, s, proposer)]);
          }
        }
      }
    }
    const held = table.filter(([, , , , h]) => h).map(([m, sc, p, s]) => `${m} ${sc} ${p.credential} ${s.operation}${s.writes && s.operation === 'select' ? '+writes' : ''}`);
    expect(held).toEqual([
      'write_only agents api_key select+writes',
      'write_only agents api_key insert',
      'write_only everyone session select+writes',
      'write_only everyone session insert',
      'write_only everyone api_key select+writes',
      'write_only everyone api_key insert',
      'ddl_only agents api_key ddl',
      'ddl_only everyone session ddl',
      'ddl_only everyone api_key ddl',
      'all agents api_key select+writes',
      'all agents api_key insert',
      'all agents api_key ddl',
      'all everyone session select+writes',
      'all everyone session insert',
      'all everyone session ddl',
      'all everyone api_key select+writes',
      'all everyone api_key insert',
      'all everyone api_key ddl',
    ]);
  });

  it('a pending proposal past its expiry reads as expired; a decided one keeps its status', () => {
    const past = new Date(Date.now() - 1);
    const future = new Date(Date.now() + 60_000);
    expect(statusOf({ status: 'pending', expires_at: past })).toBe('expired');
    expect(statusOf({ status: 'pending', expires_at: future })).toBe('pending');
    expect(statusOf({ status: 'executed', expires_at: past })).toBe('executed');
  });
});
