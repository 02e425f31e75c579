import { StfError } from './types.js';

/**
 * docs/stfs.md#the-docker-runtime: a docker STF's `code` is base64 of this JSON document. `{ "image": "…" }` alone is a
 * complete config (the origin platform's form): the image's own ENTRYPOINT, CMD and WORKDIR run. `command`, when given,
 * replaces the image's CMD only (docker's `command` override): an ENTRYPOINT of the image stays and receives it as
 * arguments.
 */
export interface DockerConfig {
  image: string;
  command?: string[];
  env?: Record<string, string>;
  /** Names of the STF's secrets to pass as environment variables. */
  secret_keys?: string[];
}

const ENV_NAME = /^[A-Za-z_][A-Za-z0-9_]{0,127}$/;
// A conservative reference: [registry/]name[:tag][@digest], lower-case path components.
const IMAGE = /^[a-z0-9]+(?:[._-][a-z0-9]+)*(?::[0-9]+)?(?:\/[a-z0-9]+(?:[._-][a-z0-9]+)*)*(?::[\w][\w.-]{0,127})?(?:@sha256:[a-f0-9]{64})?$/;

const bad = (why: string) => new StfError('invalid_module', `Invalid docker STF config: ${why}`);

export function parseDockerConfig(bytes: Uint8Array): DockerConfig {
  let doc: unknown;
  try {
    doc = JSON.parse(Buffer.from(bytes).toString('utf8'));
  } catch {
    throw bad('code must be base64 of a JSON object { image, command?, env?, secret_keys? }');
  }
  if (typeof doc !== 'object' || doc === null || Array.isArray(doc)) throw bad('expected a JSON object');
  const { image, command, env, secret_keys, ...rest } = doc as Record<string, unknown>;
  const unknown = Object.keys(rest);
  if (unknown.length) throw bad(`unknown field ${unknown[0]}`);
  if (typeof image !== 'string' || image.length > 255 || !IMAGE.test(image)) throw bad('image must be an image reference such as localhost/tool:1.0');
  if (command !== undefined && (!Array.isArray(command) || command.length === 0 || command.some((c) => typeof c !== 'string'))) {
    throw bad("command must be a non-empty array of strings when given (left out, the image's own ENTRYPOINT and CMD run)");
  }
  if (env !== undefined) {
    if (typeof env !== 'object' || env === null || Array.isArray(env)) throw bad('env must be an object of strings');
    for (const [k, v] of Object.entries(env)) {
      if (!ENV_NAME.test(k)) throw bad(`env name ${JSON.stringify(k)} is not a valid variable name`);
      if (typeof v !== 'string') throw bad(`env ${k} must be a string`);
    }
  }
  if (secret_keys !== undefined) {
    if (!Array.isArray(secret_keys) || secret_keys.some((k) => typeof k !== 'string' || !ENV_NAME.test(k))) {
      throw bad('secret_keys must be an array of variable names');
    }
  }
  return {
    image,
    ...(command !== undefined ? { command: command as string[] } : {}),
    ...(env ? { env: env as Record<string, string> } : {}),
    ...(secret_keys ? { secret_keys: secret_keys as string[] } : {}),
  };
}
