import { resolve } from 'node:path';
import { jsonSchema, tool, type JSONSchema7 } from 'ai';
import type { ApprovalConfig, ApprovalDecision, ResolvedApproval } from '../approval/approval.js';
import { attachDecided, gateToolset } from '../approval/gate-toolset.js';
import { named, type NamedTool } from '../approval/named-tool.js';
import { bindTools, settingsOf } from '../approval/tool-binding.js';
import { native } from '../native/binding.js';
import { awaitNative, callNative } from '../native/errors.js';

/** The built-in tools (Forge's), in the order they are offered. */
export const BUILTIN_TOOL_NAMES: readonly string[] = native.builtinToolNames();

/** Default approval of each built-in tool: `ask` for the network and for writes, `preApproved` otherwise. */
export const BUILTINS_DEFAULT_APPROVAL: Readonly<Record<string, ApprovalDecision>> = Object.fromEntries(
  native.documentedApprovals('builtins', [...BUILTIN_TOOL_NAMES]).map((tool) => [tool.name, tool.decision]),
);

export interface BuiltinsOptions {
  /** Only these tools (default: all of {@link BUILTIN_TOOL_NAMES}). */
  tools?: readonly string[];
  /** Applied on top of the defaults ({@link BUILTINS_DEFAULT_APPROVAL}). */
  approval?: ApprovalConfig;
  /** Where `file_create` writes `.toolgate/files/` (default: the current directory). */
  workDir?: string;
  /** `http_request`'s network policy. */
  http?: {
    /**
     * Host names, addresses or CIDR ranges that may be reached although they are internal
     * (loopback, private, link-local, metadata). Everything else internal is refused, after DNS
     * resolution and on every redirect.
     */
    allow?: readonly string[];
    /** Milliseconds for a whole request, redirects included (default 30000, at most 300000). */
    timeoutMs?: number;
    /** Bytes of a response body kept (default 1 MiB, at most 16 MiB); the rest is cut and marked. */
    maxResponseBytes?: number;
  };
  /** `web_search`'s provider (default: `WEB_SEARCH_PROVIDER`, else the first of `TAVILY_API_KEY`, `PERPLEXITY_API_KEY` set). */
  webSearch?: {
    provider?: 'tavily' | 'perplexity';
    /** The provider's base URL (a proxy, or a local server in tests). */
    baseUrl?: string;
  };
}

/** The AI SDK tools of a configured builtins toolset, without approval. */
function unapprovedTools(builtins: native.BuiltinTools): NamedTool[] {
  return builtins.specs().map((spec) =>
    named(
      spec.name,
      tool({
        description: spec.description,
        inputSchema: jsonSchema<Record<string, unknown>>(JSON.parse(spec.inputSchema) as JSONSchema7),
        execute: async (input: Record<string, unknown>) => awaitNative(builtins.run(spec.name, input ?? {})),
      }),
    ),
  );
}

/** The built-in tools of a worker plan with the approvals the core decided. */
export function buildBuiltinTools(builtins: native.BuiltinTools, decided: readonly ResolvedApproval[]): NamedTool[] {
  return attachDecided(unapprovedTools(builtins), decided);
}

/**
 * Forge's built-in tools: `http_request` (SSRF-safe: internal addresses are refused unless
 * `http.allow` names them), `json_parse` (RFC 9535 JSONPath), `csv_parse`, `datetime_now`,
 * `uuid_generate`, `math_calculate`, `file_create` (into `<workDir>/.toolgate/files/`) and
 * `web_search` (Tavily or Perplexity). They run in the Rust core. Network and write tools default
 * to `ask`, the others to `preApproved`; `approval` is applied on top and may name any built-in
 * tool. Throws `CONFIG_INVALID` for an unknown option or tool, or a bad limit.
 */
export function builtinsToolset(options: BuiltinsOptions = {}): NamedTool[] {
  const builtins = callNative(() => new native.BuiltinTools(options));
  const tools = gateToolset('builtins', unapprovedTools(builtins), options.approval, BUILTIN_TOOL_NAMES, 'builtins approval');
  return bindTools(tools, { workDir: resolve(options.workDir ?? process.cwd()), settings: settingsOf(options, []) });
}
