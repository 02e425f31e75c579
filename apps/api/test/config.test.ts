import { describe, expect, it } from 'vitest';
import { loadConfig } from '../src/config.js';
import { loginPageUrl } from '../src/login-page.js';

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

  it('CONSOLE_URL: the base of the login links, the service itself when unset; credentials, queries and fragments refused', () => {
    expect(loginPageUrl(loadConfig({}))).toBe('http://127.0.0.1:8080/console/login');
    expect(loginPageUrl(loadConfig({ PORT: '9000' }))).toBe('http://127.0.0.1:9000/console/login');
    expect(loginPageUrl(loadConfig({ CONSOLE_URL: ' https://app.example.com/ ' }))).toBe('https://app.example.com/console/login');
    expect(loginPageUrl(loadConfig({ CONSOLE_URL: 'https://example.com/wds/' }))).toBe('https://example.com/wds/console/login');
    for (const bad of ['app.example.com', 'ftp://app.example.com', 'https://u:p@app.example.com', 'https://app.example.com/?x=1', 'https://app.example.com/#x', 'javascript:alert(1)']) {
      expect(() => loadConfig({ CONSOLE_URL: bad }), bad).toThrow(/CONSOLE_URL/);
    }
  });

  it('AUTH_AUTHORIZE_URL: only with the token exchange and an https CONSOLE_URL (the redirect URI)', () => {
    const flow = { AUTH_AUTHORIZE_URL: 'https://id.example.com/authorize', AUTH_TOKEN_URL: 'https://id.example.com/token', AUTH_CLIENT_ID: 'console', CONSOLE_URL: 'https://app.example.com' };
    expect(loadConfig(flow).AUTH_SCOPE).toBe('openid email profile');
    expect(() => loadConfig({ ...flow, AUTH_TOKEN_URL: undefined })).toThrow(/AUTH_AUTHORIZE_URL needs AUTH_TOKEN_URL/);
    expect(() => loadConfig({ ...flow, AUTH_CLIENT_ID: undefined })).toThrow(/AUTH_AUTHORIZE_URL needs AUTH_CLIENT_ID/);
    expect(() => loadConfig({ ...flow, CONSOLE_URL: 'http://app.example.com' })).toThrow(/https URL/);
    expect(() => loadConfig({ ...flow, CONSOLE_URL: undefined })).toThrow(/https URL/);
  });
});
