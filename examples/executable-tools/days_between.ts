/**
 * Tool: convert_temperature
 * Description: Converts a temperature between Celsius and Fahrenheit.
 * Input:
 *   value (number): The temperature to convert
 *   to (string): The unit to convert to, "C" or "F"
 * Output: {"value": <number>, "unit": "C" | "F"}
 */
// A Forge docstring tool in TypeScript: toolgate runs it with tsx (or bun) and passes the
// input as JSON on stdin.
import { readFileSync } from 'node:fs';

const input = JSON.parse(readFileSync(0, 'utf8')) as { value: number; to: string };
if (input.to !== 'C' && input.to !== 'F') {
  console.log(JSON.stringify({ error: `unit '${input.to}' is neither C nor F` }));
} else {
  const value = input.to === 'F' ? (input.value * 9) / 5 + 32 : ((input.value - 32) * 5) / 9;
  console.log(JSON.stringify({ value: Math.round(value * 100) / 100, unit: input.to }));
}
