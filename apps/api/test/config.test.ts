import { describe, expect, it } from 'vitest';
import { loadConfig } from '../src/config.js';

describe('configuration', () => {
  it('has documented defaults for the STF runtimes', () => {
    const c = loadConfig({});
    expect(c.DOCKER_HOST).toBeUndefined();
    expect(c.STF_WASM_ALLOWED_HOSTS).toEqual([]);
    expect([c.STF_DOCKER_TIMEOUT_MS, c.STF_DOCKER_MEMORY_MB, c.STF_DOCKER_PIDS, c.STF_DOCKER_CONCURRENCY]).toEqual([300_000, 256, 64, 2]);
  });

  it('parses the wasm host allowlist and the docker engine address', () => {
    const c = loadConfig({ STF_WASM_ALLOWED_HOSTS: 'api.example.com, *.internal.example.com', DOCKER_HOST: 'unix:///run/podman/podman.sock' });
    expect(c.STF_WASM_ALLOWED_HOSTS).toEqual(['api.example.com', '*.internal.example.com']);
    expect(c.DOCKER_HOST).toBe('unix:///run/podman/podman.sock');
  });

  it('refuses bad values with the variable named', () => {
    expect(() => loadConfig({ DOCKER_HOST: '/var/run/docker.sock' })).toThrow(/DOCKER_HOST/);
    expect(() => loadConfig({ STF_WASM_ALLOWED_HOSTS: 'http://evil/' })).toThrow(/STF_WASM_ALLOWED_HOSTS/);
    expect(() => loadConfig({ STF_DOCKER_CONCURRENCY: '0' })).toThrow(/STF_DOCKER_CONCURRENCY/);
  });
});
