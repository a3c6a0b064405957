import { createRequire } from 'node:module';

const require = createRequire(import.meta.url);

/** The major version of the `ai` package this process resolves (6 or 7). */
export const AI_MAJOR: number = Number.parseInt(
  (require('ai/package.json') as { version: string }).version.split('.')[0] ?? '0',
  10,
);
