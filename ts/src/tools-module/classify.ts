/**
 * Sorts the exports of a tools module into tool candidates (format 1: a function `foo` plus its
 * zod schema `fooSchema`; format 2: a tool object) and everything else, with a precise reason
 * for each export that is not a usable tool.
 */
import { describeValue, isClass, isToolInputSchema, isToolName, isZodSchema, looksLikeToolObject } from './values.js';

const SCHEMA_SUFFIX = 'Schema';
const NAME_RULE = 'letters, digits, _ and -, at most 64 characters';

/** An export that is meant to be a tool; `problems` is empty when it is a valid one. */
export type Candidate =
  | {
      format: 'function';
      exportName: string;
      toolName: string;
      run: (input: unknown) => unknown;
      schema: unknown;
      problems: string[];
    }
  | {
      format: 'object';
      exportName: string;
      /** The object's own `name`, when it is a valid tool name. */
      toolName: string | undefined;
      tool: Record<string, unknown>;
      problems: string[];
    };

export interface Classification {
  candidates: Candidate[];
  /** Exports that are not tools → why, phrased for someone who whitelisted them. */
  others: Map<string, string>;
  exportNames: string[];
}

export function classifyExports(namespace: Record<string, unknown>): Classification {
  const exportNames = Object.keys(namespace).filter((name) => name !== '__esModule');
  const candidates: Candidate[] = [];
  const others = new Map<string, string>();
  const isToolFunction = (name: string) =>
    typeof namespace[name] === 'function' && !isClass(namespace[name]) && Object.hasOwn(namespace, name + SCHEMA_SUFFIX);
  const seen = new Set<unknown>();

  // A default export that repeats a named one should be known by the name, so it goes last.
  const inOrder = [...exportNames.filter((name) => name !== 'default'), ...exportNames.filter((name) => name === 'default')];
  for (const exportName of inOrder) {
    const value = namespace[exportName];
    const schemaName = exportName + SCHEMA_SUFFIX;
    if (isToolFunction(exportName)) {
      const schema = namespace[schemaName];
      candidates.push({
        format: 'function',
        exportName,
        toolName: exportName,
        run: value as (input: unknown) => unknown,
        schema,
        problems: [...functionNameProblems(exportName), ...schemaProblems(schemaName, schema)],
      });
    } else if (exportName.endsWith(SCHEMA_SUFFIX) && isToolFunction(exportName.slice(0, -SCHEMA_SUFFIX.length))) {
      const base = exportName.slice(0, -SCHEMA_SUFFIX.length);
      others.set(exportName, `'${exportName}' is the input schema of tool '${base}', not a tool; whitelist '${base}'`);
    } else if (typeof value === 'function' && !isClass(value)) {
      others.set(
        exportName,
        `export '${exportName}' is a function, but the module has no export '${schemaName}'; ` +
          `add \`export const ${schemaName} = z.object({ ... })\` describing its input`,
      );
    } else if (looksLikeToolObject(value)) {
      // The same object exported twice (`export default weather` too) is one tool.
      if (seen.has(value)) continue;
      seen.add(value);
      const name = value.name;
      candidates.push({
        format: 'object',
        exportName,
        toolName: typeof name === 'string' && isToolName(name) ? name : undefined,
        tool: value,
        problems: toolObjectProblems(exportName, value),
      });
    } else if (isZodSchema(value)) {
      const base = exportName.endsWith(SCHEMA_SUFFIX) ? exportName.slice(0, -SCHEMA_SUFFIX.length) : '';
      const fix = base ? `export a function '${base}' that takes it` : `name it '<tool>Schema' and export a function '<tool>'`;
      others.set(exportName, `export '${exportName}' is a zod schema; a schema is never a tool itself: ${fix}`);
    } else {
      others.set(
        exportName,
        `export '${exportName}' is ${describeValue(value)}, not a tool; export a function '${exportName}' with a zod ` +
          `schema '${schemaName}', or a tool object with name, description, inputSchema and execute`,
      );
    }
  }
  return { candidates, others, exportNames };
}

function functionNameProblems(name: string): string[] {
  if (isToolName(name)) return [];
  return [`'${name}' is not a valid tool name (${NAME_RULE}); rename the function and its schema`];
}

function schemaProblems(schemaName: string, schema: unknown): string[] {
  if (isZodSchema(schema)) return [];
  const kind = describeValue(schema);
  let fix = 'make it a zod schema such as z.object({ ... })';
  if (kind.includes('zod shape')) fix = 'wrap it in z.object({ ... })';
  else if (kind.includes('JSON Schema') || kind.includes('jsonSchema')) {
    fix = 'make it a zod schema, or export a tool object whose inputSchema is jsonSchema({ ... }) instead';
  }
  return [`'${schemaName}' is ${kind}; ${fix}`];
}

function toolObjectProblems(exportName: string, tool: Record<string, unknown>): string[] {
  const where = `export '${exportName}' (a tool object)`;
  const problems: string[] = [];
  const { name, description, inputSchema, execute, needsApproval } = tool;
  if (name === undefined) {
    const suggestion = isToolName(exportName) ? exportName : 'my_tool';
    problems.push(`${where} has no name; add name: '${suggestion}'`);
  } else if (typeof name !== 'string') {
    problems.push(`${where} has a name that is ${describeValue(name)}; it must be a string (${NAME_RULE})`);
  } else if (!isToolName(name)) {
    problems.push(`${where} has name ${JSON.stringify(name)}, which is not a valid tool name (${NAME_RULE})`);
  }
  if (typeof description !== 'string' || description.trim() === '') {
    problems.push(
      description === undefined || typeof description === 'string'
        ? `${where} has no description; add one: the model reads it to decide when to call the tool`
        : `${where} has a description that is ${describeValue(description)}; it must be a string`,
    );
  }
  if (inputSchema === undefined) {
    problems.push(`${where} has no inputSchema; add one (z.object({}) for a tool without input)`);
  } else if (!isToolInputSchema(inputSchema)) {
    problems.push(
      `${where} has an inputSchema that is ${describeValue(inputSchema)}; use a zod schema or jsonSchema({ ... }) from 'ai'`,
    );
  }
  if (typeof execute !== 'function') {
    problems.push(`${where} has an execute that is ${describeValue(execute)}; it must be a function (input, options) => result`);
  }
  if (needsApproval !== undefined && typeof needsApproval !== 'boolean' && typeof needsApproval !== 'function') {
    problems.push(`${where} has a needsApproval that is ${describeValue(needsApproval)}; use true, false or a function`);
  }
  return problems;
}
