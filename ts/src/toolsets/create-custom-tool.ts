import { relative } from 'node:path';
import { jsonSchema, tool } from 'ai';
import { attachApproval, type ApprovalConfig } from '../approval/approval.js';
import { named, type NamedTool } from '../approval/named-tool.js';
import { bindTool, settingsOf } from '../approval/tool-binding.js';
import { native } from '../native/binding.js';
import { LIMITS } from '../native/constants.js';
import { awaitNative, callNative } from '../native/errors.js';
import { type SandboxOption, warnSandbox } from '../native/sandbox.js';

/** The model-facing name of the tool `createCustomTool` returns. */
export const CREATE_CUSTOM_TOOL_NAME = 'create_custom_tool';

export interface CreateCustomToolOptions {
  /** The project directory (default `process.cwd()`). */
  workDir?: string;
  /**
   * Where new tools are written (default `<workDir>/toolgate-tools`, the project tools
   * directory). When it lies inside `workDir` it must stay inside with symlinks resolved.
   */
  dir?: string;
  /** Approval of `create_custom_tool` itself (default `ask`). */
  approval?: ApprovalConfig;
  /**
   * The kernel sandbox of the validation run (the new tool's `description`; default
   * `{ mode: 'enforce', network: false }`). It never gets network or a writable work
   * directory: the code is the model's. See {@link SandboxOption}.
   */
  sandbox?: SandboxOption;
}

/** What the model sends. */
export interface CreateCustomToolInput {
  name: string;
  description: string;
  language: native.ToolLanguage;
  inputSchema: Record<string, unknown>;
  code: string;
  replace?: boolean;
}

const DESCRIPTION = `Creates a new executable tool in the project tools directory, for tasks you will repeat. \
The tool is checked (its description must load) before it is kept, and it becomes available as \
custom_tool_<name> after the next tool discovery. \
"code" depends on "language": python — code that defines def run(args): returning a JSON-serialisable value or a string; \
node — code that defines function run(args) (may be async) returning the same; \
bash — the body of a function that reads the JSON input on stdin and prints the result. \
"args" is the input, already validated against "inputSchema" (a JSON Schema with "type": "object"). \
Raise an exception, or return/print {"error": "message"}, to report a failure.`;

const INPUT_SCHEMA = jsonSchema<CreateCustomToolInput>({
  type: 'object',
  properties: {
    name: {
      type: 'string',
      pattern: '^[a-zA-Z0-9_-]+$',
      maxLength: LIMITS.maxToolNameLength - LIMITS.executableToolPrefix.length,
      description: 'Tool name: letters, digits, "_" and "-"',
    },
    description: { type: 'string', minLength: 1, description: 'What the tool does; the model reads it' },
    language: { type: 'string', enum: ['python', 'node', 'bash'] },
    inputSchema: {
      type: 'object',
      description: 'JSON Schema of the tool input, with "type": "object"',
    },
    code: { type: 'string', minLength: 1, description: 'The implementation (see the tool description)' },
    replace: { type: 'boolean', description: 'Replace an existing tool of this name that you created before' },
  },
  required: ['name', 'description', 'language', 'inputSchema', 'code'],
  additionalProperties: false,
});

/**
 * A tool with which an agent writes a new protocol tool into the project tools directory
 * (default approval `ask`). The Rust core writes it atomically, runs its `description` in the
 * kernel sandbox to check it, and removes it again (or restores the previous version) when it does not work; the
 * model then sees why. The next discovery (`executableTools()`) finds it.
 */
export function createCustomTool(options: CreateCustomToolOptions = {}): NamedTool<CreateCustomToolInput> {
  const plan = callNative(() => native.planCreateCustomTool(options));
  warnSandbox(plan.sandboxWarning);
  const workDir = plan.workDir;
  const base = tool({
    description: DESCRIPTION,
    inputSchema: INPUT_SCHEMA,
    execute: async (input: CreateCustomToolInput) => {
      const created = await awaitNative(
        plan.write(
          {
            name: input.name,
            description: input.description,
            language: input.language,
            inputSchema: input.inputSchema,
            code: input.code,
          },
          input.replace ?? false,
        ),
      );
      return {
        created: relative(workDir, created.path) || created.path,
        toolName: `${LIMITS.executableToolPrefix}${created.name}`,
        replaced: created.replaced,
        note: 'The tool is available after the next discovery of executable tools.',
      };
    },
  });
  return bindTool(attachApproval(named(CREATE_CUSTOM_TOOL_NAME, base), plan.approval), {
    workDir,
    sandbox: (options as { sandbox?: unknown }).sandbox ?? null,
    settings: settingsOf(options, []),
  });
}
