/**
 * Tool: days_between
 * Description: Counts the days from one calendar date to another (negative when the second is earlier).
 * Input:
 *   from (string): The first date, YYYY-MM-DD
 *   to (string): The second date, YYYY-MM-DD
 * Output: {"days": <integer>}
 */
// A Forge docstring tool in TypeScript: toolgate runs it with tsx (or bun) and passes the
// input as JSON on stdin.
import { readFileSync } from 'node:fs';

/** Days since 1970-01-01 of a YYYY-MM-DD date, or null when it is not a real date. */
function dayNumber(text: string): number | null {
  const match = /^(\d{4})-(\d{2})-(\d{2})$/.exec(text);
  if (!match) return null;
  const [year, month, day] = match.slice(1).map(Number) as [number, number, number];
  const date = new Date(0);
  date.setUTCFullYear(year, month - 1, day);
  // Dates roll over (2025-02-30 becomes March 2): such a date is refused, not moved.
  if (date.getUTCFullYear() !== year || date.getUTCMonth() !== month - 1 || date.getUTCDate() !== day) return null;
  return date.getTime() / 86_400_000;
}

const input = JSON.parse(readFileSync(0, 'utf8')) as { from: string; to: string };
const [from, to] = [dayNumber(input.from), dayNumber(input.to)];
if (from === null || to === null) {
  const bad = from === null ? input.from : input.to;
  console.log(JSON.stringify({ error: `'${bad}' is not a date written YYYY-MM-DD` }));
} else {
  console.log(JSON.stringify({ days: to - from }));
}
