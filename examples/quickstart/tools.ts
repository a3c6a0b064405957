/**
 * Example tools module for toolgate. Load it with
 *
 *   const tools = await loadCustomTools('./examples/quickstart/tools.ts', {
 *     tools: ['calculateFibonacci', 'convert_temperature'],
 *     approval: { default: 'ask', tools: { calculateFibonacci: 'preApproved' } },
 *   });
 *
 * No build step: toolgate compiles this file when it loads it.
 */
import { tool } from 'ai';
import { z } from 'zod';

// Format 1: a function plus a zod schema named `<function>Schema`. The JSDoc comment right
// above the function is the description the model sees; @param and @returns tags are left out
// (describe the fields in the schema instead).

/**
 * Calculates the nth Fibonacci number exactly (F(0) = 0, F(1) = 1), for n up to 1000.
 * Use it instead of computing Fibonacci numbers yourself.
 * @param input.n - the index in the sequence
 * @returns the number, as a decimal string (it can exceed what a JSON number holds)
 */
export function calculateFibonacci({ n }: { n: number }): string {
  let [previous, current] = [0n, 1n];
  for (let i = 0; i < n; i++) [previous, current] = [current, previous + current];
  return previous.toString();
}

export const calculateFibonacciSchema = z.object({
  n: z.number().int().min(0).max(1000).describe('which Fibonacci number to compute, from 0'),
});

// Format 2: a complete AI SDK tool plus a `name`. It may carry its own `needsApproval`.

export const convertTemperature = {
  name: 'convert_temperature',
  ...tool({
    description: 'Converts a temperature between Celsius and Fahrenheit.',
    inputSchema: z.object({
      value: z.number().describe('the temperature to convert'),
      from: z.enum(['celsius', 'fahrenheit']).describe('the unit of `value`'),
    }),
    execute: async ({ value, from }) => {
      const converted = from === 'celsius' ? (value * 9) / 5 + 32 : ((value - 32) * 5) / 9;
      return { value: Math.round(converted * 100) / 100, unit: from === 'celsius' ? 'fahrenheit' : 'celsius' };
    },
  }),
};
