import { describe, expect, it } from 'vitest';
import { Metrics, errorCodeOf } from '../src/index.js';

describe('Metrics', () => {
  it('renders what was recorded, with its labels', async () => {
    const m = new Metrics({ defaultMetrics: false });
    m.httpRequest('execute_sql', 200, 0.012);
    m.httpRequest('execute_sql', 200, 0.02);
    m.sqlStatement('read', 0.003);
    m.sqlRejected('POLICY_DENIED');
    m.stfRun('javascript', 'success', 0.1);
    m.stfRun('javascript', 'timeout', 1.5);
    m.workflowRun('failed', 0.4);
    m.embedded('hashing', 12, 0.01);
    const text = await m.render();
    expect(text).toContain('wds_http_requests_total{operation="execute_sql",status="200"} 2');
    expect(text).toContain('wds_http_request_duration_seconds_bucket{le="0.025",operation="execute_sql"} 2');
    expect(text).toContain('wds_sql_statement_duration_seconds_count{kind="read"} 1');
    expect(text).toContain('wds_sql_rejections_total{code="POLICY_DENIED"} 1');
    expect(text).toContain('wds_stf_runs_total{runtime="javascript",outcome="success"} 1');
    expect(text).toContain('wds_stf_runs_total{runtime="javascript",outcome="timeout"} 1');
    expect(text).toContain('wds_workflow_runs_total{status="failed"} 1');
    expect(text).toContain('wds_embedding_texts_total{embedder="hashing"} 12');
    expect(m.contentType).toMatch(/^text\/plain; version=0\.0\.4/);
  });

  it('keeps one registry per instance and process metrics on it', async () => {
    const a = new Metrics();
    const b = new Metrics();
    a.httpRequest('list_workspaces', 200, 0.001);
    expect(await a.render()).toContain('wds_http_requests_total{operation="list_workspaces",status="200"} 1');
    expect(await b.render()).not.toContain('operation="list_workspaces"');
    expect(await b.render()).toContain('process_cpu_user_seconds_total');
  });

  it('reads pool and queue gauges at collect time', async () => {
    const m = new Metrics({ defaultMetrics: false });
    const pool = { totalCount: 3, idleCount: 1, waitingCount: 2 };
    m.watchPool('service', pool);
    let queries = 0;
    m.watchQueues(async () => {
      queries++;
      return [{ queue: 'embed-file', waiting: 4, active: 1, oldestSeconds: 12.5 }];
    });
    let text = await m.render();
    expect(text).toContain('wds_db_pool_connections{pool="service",state="open"} 3');
    expect(text).toContain('wds_db_pool_connections{pool="service",state="idle"} 1');
    expect(text).toContain('wds_db_pool_waiting_clients{pool="service"} 2');
    expect(text).toContain('wds_job_queue_depth{queue="embed-file"} 4');
    expect(text).toContain('wds_job_queue_active{queue="embed-file"} 1');
    expect(text).toContain('wds_job_queue_oldest_age_seconds{queue="embed-file"} 12.5');
    expect(queries).toBe(1);
    pool.totalCount = 5;
    text = await m.render();
    expect(text).toContain('wds_db_pool_connections{pool="service",state="open"} 5');
  });

  it('never lets an unbounded value in as a label', async () => {
    const m = new Metrics({ defaultMetrics: false });
    m.httpRequest('/api/v1/workspaces/0f0e…/sql', 404, 0.001);
    m.sqlRejected('42P01');
    const text = await m.render();
    expect(text).toContain('wds_http_requests_total{operation="other",status="404"} 1');
    expect(text).not.toContain('/api/v1');
    expect(errorCodeOf({ code: '42P01' })).toBe('INTERNAL_ERROR');
    expect(errorCodeOf({ code: 'DDL_FORBIDDEN' })).toBe('DDL_FORBIDDEN');
    expect(text).toContain('wds_sql_rejections_total{code="other"} 1');
  });
});
