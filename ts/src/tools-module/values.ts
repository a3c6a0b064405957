import { native } from '../native/binding.js';

/**
 * Recognises the kinds of value a tools module exports, and names them in error messages.
 * Recognition is structural (never `instanceof`): the module may load its own copy of zod or of
 * the AI SDK, and zod 3 and zod 4 schemas have different shapes.
 */

type Record_ = Record<string, unknown>;

function isObject(value: unknown): value is Record_ {
  return typeof value === 'object' && value !== null;
}

/** The Standard Schema interface (`~standard`) that zod ≥ 3.24, zod 4, valibot, arktype… implement. */
function standardSchemaOf(value: unknown): Record_ | undefined {
  if (!isObject(value) && typeof value !== 'function') return undefined;
  const standard = (value as Record_)['~standard'];
  return isObject(standard) && typeof standard.validate === 'function' ? standard : undefined;
}

/**
 * Whether `value` is a zod schema: zod 4 (classic or mini) keeps its internals in `_zod.def`,
 * zod 3 in `_def`; both announce themselves as the Standard Schema vendor `zod`. A plain object,
 * a zod shape (`{ n: z.number() }`) or a JSON Schema is not one.
 */
export function isZodSchema(value: unknown): boolean {
  if (!isObject(value) || standardSchemaOf(value)?.vendor !== 'zod') return false;
  const zod4 = isObject(value._zod) && isObject(value._zod.def);
  const zod3 = isObject(value._def) && typeof value.safeParse === 'function';
  return zod4 || zod3;
}

/** The AI SDK marks schemas made with `jsonSchema(...)` / `zodSchema(...)` with this symbol. */
const AI_SDK_SCHEMA = Symbol.for('vercel.ai.schema');

function isAiSdkSchema(value: unknown): boolean {
  return isObject(value) && value[AI_SDK_SCHEMA as unknown as string] === true && 'jsonSchema' in value;
}

/**
 * Whether the AI SDK accepts `value` as a tool's `inputSchema`: a zod 3/4 schema or any other
 * Standard Schema, a schema made by `jsonSchema(...)`, or a lazy schema (a function returning one).
 */
export function isToolInputSchema(value: unknown): boolean {
  if (isAiSdkSchema(value) || standardSchemaOf(value) !== undefined) return true;
  return typeof value === 'function' && !isClass(value);
}

export function isClass(value: unknown): boolean {
  return typeof value === 'function' && /^class[\s{]/.test(Function.prototype.toString.call(value));
}

/** A plain object whose values are all zod schemas: `{ n: z.number() }` instead of `z.object({ n: z.number() })`. */
function isZodShape(value: unknown): boolean {
  if (!isObject(value) || Array.isArray(value)) return false;
  const values = Object.values(value);
  return values.length > 0 && values.every(isZodSchema);
}

function isJsonSchemaObject(value: unknown): boolean {
  return isObject(value) && ('$schema' in value || 'properties' in value || typeof value.type === 'string');
}

/** An object that is meant to be a tool: it has an `execute` or an `inputSchema`. */
export function looksLikeToolObject(value: unknown): value is Record_ {
  return isObject(value) && !Array.isArray(value) && !isZodSchema(value) && ('execute' in value || 'inputSchema' in value);
}

/** Names the kind of `value` for an error message: "a number", "a zod shape (…)", "a class". */
export function describeValue(value: unknown): string {
  if (value === undefined) return 'undefined';
  if (value === null) return 'null';
  if (Array.isArray(value)) return 'an array';
  if (isClass(value)) return 'a class';
  if (typeof value === 'function') return 'a function';
  if (isZodSchema(value)) return 'a zod schema';
  if (isAiSdkSchema(value)) return "an AI SDK schema (jsonSchema(...))";
  if (standardSchemaOf(value) !== undefined) {
    return `a ${String(standardSchemaOf(value)?.vendor ?? 'standard')} schema (not zod)`;
  }
  if (isZodShape(value)) return 'a plain object of zod schemas (a zod shape), not a zod schema';
  if (isJsonSchemaObject(value)) return 'a plain JSON Schema object';
  if (looksLikeToolObject(value)) return 'a tool object';
  if (isObject(value)) return 'a plain object';
  const type = typeof value;
  return `${/^[aeiou]/.test(type) ? 'an' : 'a'} ${type}`;
}

/** Whether model providers accept `name` as a tool name (the core's rule: `^[a-zA-Z0-9_-]+$`, at most 64 characters). */
export function isToolName(name: string): boolean {
  return native.toolNameProblem(name) === null;
}
