import type { Tool } from 'ai';
import type { ApprovalDecision, ResolvedApproval } from '../approval/approval.js';
import type { FileCall, FileTools } from '../native/file-tools.js';

/** The file tools for one call of a tool (by the AI SDK's `toolCallId`). */
export type FilesFor = (toolCallId: string | undefined) => FileTools;

/** Calls whose decision is remembered between `needsApproval` and `execute`, at most. */
const REMEMBERED_CALLS = 1000;

/**
 * Builds file tool `name` with `factory`. When its toolset has path rules (the core marked it
 * `dynamic`), its `needsApproval` asks the core what each call needs (`FileTools.decideCall`),
 * and `execute` runs with that decision as the approved level, so a path whose decision rose
 * in between (a symlink swapped) is refused. Blocked paths are refused in Rust either way.
 */
export function pathGatedTool(
  name: string,
  files: FileTools,
  resolved: ResolvedApproval | undefined,
  factory: (files: FilesFor) => Tool,
): Tool {
  const base: FileCall = { decision: resolved?.decision ?? 'preApproved', pathFloor: resolved?.pathFloor };
  const approvedAt = new Map<string, ApprovalDecision>();
  const filesFor: FilesFor = (toolCallId) => {
    const approved = toolCallId === undefined ? undefined : approvedAt.get(toolCallId);
    return files.forCall({ ...base, approved });
  };
  const built = factory(filesFor);
  if (!resolved?.dynamic) return built;
  return {
    ...built,
    needsApproval: (input: unknown, { toolCallId }: { toolCallId: string }) => {
      const { decision } = files.decideCall(name, input, base);
      if (approvedAt.size >= REMEMBERED_CALLS) {
        const oldest = approvedAt.keys().next().value;
        if (oldest !== undefined) approvedAt.delete(oldest);
      }
      approvedAt.set(toolCallId, decision);
      return decision === 'ask';
    },
  } as Tool;
}
