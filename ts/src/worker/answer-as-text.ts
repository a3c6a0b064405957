import type { LanguageModelMiddleware } from 'ai';
import { ASK_QUESTION, CONVERSE, TASK_COMPLETION } from './loop-tools.js';

type GenerateResult = Awaited<ReturnType<NonNullable<LanguageModelMiddleware['wrapGenerate']>>>;
type Content = GenerateResult['content'][number];
type StreamResult = Awaited<ReturnType<NonNullable<LanguageModelMiddleware['wrapStream']>>>;
type StreamPart = StreamResult['stream'] extends ReadableStream<infer T> ? T : never;

/** The input field of each loop-breaking tool that holds what the run answers. */
const ANSWER_FIELDS: Readonly<Record<string, string>> = { [TASK_COMPLETION]: 'result', [ASK_QUESTION]: 'question', [CONVERSE]: 'message' };

/** The answer a loop-breaking tool call carries (`task_completion`'s result, …), if it is one. */
function answerOf(part: { toolName?: unknown; input?: unknown }): string | undefined {
  const field = typeof part.toolName === 'string' ? ANSWER_FIELDS[part.toolName] : undefined;
  if (!field || typeof part.input !== 'string') return undefined;
  try {
    const value = (JSON.parse(part.input) as Record<string, unknown> | null)?.[field];
    return typeof value === 'string' ? value : undefined;
  } catch {
    return undefined;
  }
}

/**
 * A language-model middleware that makes the answer of a loop-breaking tool the text of the
 * step that calls it. The AI SDK's `ToolLoopAgent` returns the last step's text as
 * `result.text`, and a run that ends with `task_completion` ends on a step whose only output is
 * the tool call: without this, `result.text` is `''` and the answer is only in the tool input.
 *
 * `generate`: the step's text is the answer (`task_completion`'s `result`, `ask_question`'s
 * `question`, `converse`'s `message`), exactly as `runWorker`'s `text`. `stream`: what the model
 * streamed stays (it was shown already), and the answer follows as text before the call.
 */
export function answerAsText(): LanguageModelMiddleware {
  return {
    specificationVersion: 'v3',
    wrapGenerate: async ({ doGenerate }) => {
      const result = await doGenerate();
      const answer = result.content.map((part) => (part.type === 'tool-call' ? answerOf(part) : undefined)).find((found) => found !== undefined);
      if (answer === undefined) return result;
      const content: Content[] = [{ type: 'text', text: answer }, ...result.content.filter((part) => part.type !== 'text')];
      return { ...result, content };
    },
    wrapStream: async ({ doStream }) => {
      const { stream, ...rest } = await doStream();
      let answered = false;
      const withAnswer = stream.pipeThrough(
        new TransformStream<StreamPart, StreamPart>({
          transform(part, controller) {
            const answer = !answered && part.type === 'tool-call' ? answerOf(part) : undefined;
            if (answer !== undefined) {
              answered = true;
              const id = `toolgate-answer-${part.type === 'tool-call' ? part.toolCallId : ''}`;
              controller.enqueue({ type: 'text-start', id } as StreamPart);
              controller.enqueue({ type: 'text-delta', id, delta: answer } as StreamPart);
              controller.enqueue({ type: 'text-end', id } as StreamPart);
            }
            controller.enqueue(part);
          },
        }),
      );
      return { stream: withAnswer, ...rest };
    },
  };
}
