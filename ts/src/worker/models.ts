import { isAbsolute, resolve } from 'node:path';
import type { LanguageModel } from 'ai';
import { loadScriptedModel } from '../model/scripted-model.js';
import { callNative, ToolgateError } from '../native/errors.js';
import { native } from '../native/binding.js';

export interface ResolveModelOptions {
  /** Base URL for `openai-compatible:` (default: TOOLGATE_BASE_URL). */
  baseUrl?: string;
  /** The environment to read API keys from (default: process.env). */
  env?: Readonly<Record<string, string | undefined>>;
}

export const MODEL_PROVIDERS = ['openai', 'anthropic', 'openai-compatible', 'scripted'] as const;

const SCRIPTED = 'scripted:';

/**
 * `spec` with a relative `scripted:<file>` path made absolute against `baseDir` (a worker file's
 * folder for its `model:`, the current directory for `--model` and TOOLGATE_MODEL), so the spec
 * means the same file from any directory and any process. Other specs are returned unchanged.
 */
export function anchorModelSpec(spec: string, baseDir: string): string {
  if (!spec.startsWith(SCRIPTED)) return spec;
  const file = spec.slice(SCRIPTED.length);
  return file === '' || isAbsolute(file) ? spec : `${SCRIPTED}${resolve(baseDir, file)}`;
}

function requireKey(env: ResolveModelOptions['env'] & object, variable: string, spec: string): string {
  const key = env[variable];
  if (!key) {
    throw new ToolgateError('CONFIG_INVALID', `model '${spec}' needs an API key: set ${variable} in the environment`);
  }
  return key;
}

/**
 * Turns `provider:model` into an AI SDK model: `openai:gpt-4o-mini` (OPENAI_API_KEY),
 * `anthropic:claude-sonnet-4-5` (ANTHROPIC_API_KEY), or `openai-compatible:<model>` with a base URL
 * (`--base-url` / TOOLGATE_BASE_URL) for Ollama, llama.cpp or LM Studio (key optional:
 * TOOLGATE_API_KEY). `scripted:<file>` replays a JSON script (relative to the current directory;
 * see `loadScriptedModel`) and needs no key or network. Provider packages are loaded only when used.
 */
export async function resolveModel(spec: string, options: ResolveModelOptions = {}): Promise<LanguageModel> {
  callNative(() => native.checkResolveModelOptions(options));
  const env = options.env ?? process.env;
  const colon = spec.indexOf(':');
  const provider = colon > 0 ? spec.slice(0, colon) : '';
  const modelId = colon > 0 ? spec.slice(colon + 1) : '';
  if (provider === 'scripted' && !modelId) {
    throw new ToolgateError('CONFIG_INVALID', `model '${spec}' names no script; write scripted:<file>, e.g. scripted:examples/quickstart/scripted.json`);
  }
  if (!provider || !modelId) {
    throw new ToolgateError(
      'CONFIG_INVALID',
      `model '${spec}' is not of the form provider:model (providers: ${MODEL_PROVIDERS.join(', ')}), e.g. openai:gpt-4o-mini`,
    );
  }
  switch (provider) {
    case 'openai': {
      const { createOpenAI } = await import('@ai-sdk/openai');
      return createOpenAI({ apiKey: requireKey(env, 'OPENAI_API_KEY', spec) })(modelId);
    }
    case 'anthropic': {
      const { createAnthropic } = await import('@ai-sdk/anthropic');
      return createAnthropic({ apiKey: requireKey(env, 'ANTHROPIC_API_KEY', spec) })(modelId);
    }
    case 'openai-compatible': {
      const baseURL = options.baseUrl ?? env.TOOLGATE_BASE_URL;
      if (!baseURL) {
        throw new ToolgateError(
          'CONFIG_INVALID',
          `model '${spec}' needs a server address: pass --base-url http://127.0.0.1:11434/v1 or set TOOLGATE_BASE_URL`,
        );
      }
      const { createOpenAICompatible } = await import('@ai-sdk/openai-compatible');
      const apiKey = env.TOOLGATE_API_KEY;
      return createOpenAICompatible({ name: 'openai-compatible', baseURL, ...(apiKey ? { apiKey } : {}) })(modelId);
    }
    case 'scripted':
      return loadScriptedModel(modelId);
    default:
      throw new ToolgateError(
        'CONFIG_INVALID',
        `unknown model provider '${provider}' in '${spec}'; use one of ${MODEL_PROVIDERS.join(', ')}`,
      );
  }
}

/** Whether `model` matches one of `patterns` (`*` matches any text); an empty list allows all. */
export function modelIsCompatible(patterns: readonly string[], model: string): boolean {
  return callNative(() => native.modelIsCompatible([...patterns], model));
}
