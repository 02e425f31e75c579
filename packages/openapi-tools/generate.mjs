#!/usr/bin/env node
// node generate.mjs <openapi.json> <schema.d.ts>: openapi-typescript's own programmatic API, with this package's
// TypeScript 5 (openapi-typescript builds its output with the TypeScript 5 compiler API, which TypeScript 7 lacks).
import { readFileSync, writeFileSync } from 'node:fs';
import openapiTS, { astToString } from 'openapi-typescript';

const [input, output] = process.argv.slice(2);
if (!input || !output) {
  console.error('usage: node generate.mjs <openapi.json> <schema.d.ts>');
  process.exit(2);
}
const ast = await openapiTS(JSON.parse(readFileSync(input, 'utf8')));
writeFileSync(output, astToString(ast));
