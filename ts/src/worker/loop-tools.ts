import { tool } from 'ai';
import { z } from 'zod';
import type { NamedTool } from '../approval/named-tool.js';
import { LIMITS } from '../native/constants.js';

/**
 * Tools that end the run. They have no `execute`: the AI SDK stops at a call to them and
 * `runWorker` turns the call into the run's result.
 */
export const RESERVED_TOOL_NAMES: readonly string[] = LIMITS.reservedToolNames;
const [taskCompletion, askQuestion, converse] = RESERVED_TOOL_NAMES;
if (!taskCompletion || !askQuestion || !converse) throw new Error('the core names no loop-breaking tools');
/** Ends the run with a result. */
export const TASK_COMPLETION: string = taskCompletion;
/** Ends the run with a question for the user. */
export const ASK_QUESTION: string = askQuestion;
/** Ends the run with a conversational reply (Forge's `converse`). */
export const CONVERSE: string = converse;

/** The loop-breaking tools; `outputSchema` (JSON text) is the schema a `task_completion` result must match. */
export function loopBreakingTools(outputSchema?: string): NamedTool[] {
  const schemaNote = outputSchema ? ` \`result\` must be JSON text matching this JSON Schema: ${outputSchema}` : '';
  return [
    {
      name: TASK_COMPLETION,
      ...tool({
        description: `Call this when the task is done. \`result\` is the final answer for the user; the run ends.${schemaNote}`,
        inputSchema: z.object({ result: z.string().describe('The final answer or summary of what was done') }),
      }),
    },
    {
      name: ASK_QUESTION,
      ...tool({
        description:
          'Call this when you cannot continue without information only the user has. The run ends and the question is returned to the user.',
        inputSchema: z.object({ question: z.string().describe('One clear question for the user') }),
      }),
    },
    {
      name: CONVERSE,
      ...tool({
        description:
          'Call this to reply conversationally when the message needs an answer, not a task (a greeting, a remark, a ' +
          'short explanation). The run ends and `message` is returned to the user as the reply.',
        inputSchema: z.object({ message: z.string().describe('The reply to the user') }),
      }),
    },
  ];
}
