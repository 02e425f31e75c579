declare module 's3rver' {
  import type { Server } from 'node:http';
  interface S3rverOptions {
    address?: string;
    port?: number;
    silent?: boolean;
    directory?: string;
    resetOnClose?: boolean;
    configureBuckets?: { name: string }[];
  }
  type Middleware = (ctx: {
    method: string;
    path: string;
    query: Record<string, string | string[] | undefined>;
    status: number;
    body: unknown;
    type: string;
    get(header: string): string;
    set(header: string, value: string): void;
    response: { get(header: string): string };
  }, next: () => Promise<void>) => Promise<void>;
  export default class S3rver {
    constructor(options?: S3rverOptions);
    middleware: Middleware[];
    httpServer?: Server;
    run(): Promise<{ address: string; port: number }>;
    close(): Promise<void>;
  }
}
