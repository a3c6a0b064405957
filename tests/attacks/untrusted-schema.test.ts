/**
 * Class: an executable tool's input schema is untrusted (a repository's tool wrote it), and the
 * model's input is too. A pattern that needs backtracking (`(?=(a+)+$)x`) with a long input
 * used to hold the Node event loop for seconds. Now patterns run on a linear-time engine, a
 * schema that needs backtracking is refused when the tool is loaded (the diagnostic names the
 * file, the JSON pointer of the pattern and why), and inputs are checked off the JavaScript
 * thread.
 */
import { chmodSync, mkdirSync, mkdtempSync, realpathSync, statSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';
import { ExecutableToolRegistry, executableTools, type ExecutableToolDiagnostic, type NamedTool, ToolgateError } from '../../ts/src/index.js';
import { tempDir } from '../helpers/fs.js';

// Nothing here may touch the real ~/.cache.
process.env.XDG_CACHE_HOME = mkdtempSync(join(tmpdir(), 'toolgate-xdg-'));

const BIG = 60_000;

/** A protocol tool whose description has `schema` and whose run prints its input. */
function protocolTool(dir: string, name: string, schema: object): string {
  const path = join(dir, name);
  writeFileSync(
    path,
    `#!/bin/sh
if [ "$1" = description ]; then
  cat <<'EOF'
${JSON.stringify({ name, description: `The ${name} tool`, input_schema: schema })}
EOF
  exit 0
fi
cat > /dev/null
echo '{"ok": true}'
`,
  );
  chmodSync(path, 0o755);
  return path;
}

function fixture() {
  const root = tempDir('toolgate-schema-');
  const tools = join(root, 'tools');
  const work = join(root, 'work');
  mkdirSync(tools);
  mkdirSync(work);
  return { root, tools, work, cacheDir: join(root, 'cache') };
}

const object = (properties: object, extra: object = {}) => ({ type: 'object', properties, ...extra });

/** Schemas a backtracking engine needs, each with where the refused pattern sits. */
const REFUSED: [string, object, string][] = [
  ['the issue: lookahead over a nested quantifier', object({ q: { type: 'string', pattern: '(?=(a+)+$)x' } }), '/properties/q/pattern'],
  ['negative lookahead', object({ q: { type: 'string', pattern: '^(?!admin).*$' } }), '/properties/q/pattern'],
  ['lookbehind', object({ q: { pattern: '(?<=a)b' } }), '/properties/q/pattern'],
  ['backreference', object({ q: { pattern: '(a)\\1' } }), '/properties/q/pattern'],
  ['named backreference', object({ q: { pattern: '(?<x>a)\\k<x>' } }), '/properties/q/pattern'],
  ['atomic group', object({ q: { pattern: '(?>a+)b' } }), '/properties/q/pattern'],
  ['nested in items', object({ list: { type: 'array', items: { type: 'object', properties: { q: { pattern: '(?=a)a' } } } } }), '/properties/list/items/properties/q/pattern'],
  ['in $defs', object({ q: { $ref: '#/$defs/d' } }, { $defs: { d: { type: 'string', pattern: '(?=(a+)+$)x' } } }), 'pattern'],
  ['a patternProperties key', { type: 'object', patternProperties: { '(?=(a+)+$)x': { type: 'string' } } }, 'patternProperties'],
];

async function discover(f: ReturnType<typeof fixture>) {
  let diagnostics: readonly ExecutableToolDiagnostic[] = [];
  const tools = await executableTools({
    dirs: [f.tools],
    workDir: f.work,
    cacheDir: f.cacheDir,
    approval: { default: 'preApproved' },
    onDiagnostics: (seen) => (diagnostics = seen),
  });
  return { tools, diagnostics };
}

async function execute(tool: NamedTool, input: unknown): Promise<unknown> {
  return (tool.execute as (input: unknown, options: object) => Promise<unknown>)(input, { toolCallId: 'x', messages: [] });
}

describe('an untrusted input schema', () => {
  it('that needs a backtracking engine is refused when the tool is loaded, naming file, pointer and why', async () => {
    const f = fixture();
    const paths = REFUSED.map(([, schema], index) => protocolTool(f.tools, `refused_${index}`, schema));
    protocolTool(f.tools, 'fine', object({ q: { type: 'string', pattern: '(a+)+$' } }));
    const { tools, diagnostics } = await discover(f);
    expect(tools.map((t) => t.name)).toEqual(['custom_tool_fine']);
    REFUSED.forEach(([label, , pointer], index) => {
      const diagnostic = diagnostics.find((d) => d.path === paths[index]);
      expect(diagnostic, label).toBeDefined();
      expect(diagnostic!.reason, label).toContain(pointer);
      expect(diagnostic!.reason, label).toContain('linear-time');
    });
  });

  it('is refused again when an older toolgate cached its description as good (the cache format moved on)', async () => {
    const f = fixture();
    const schema = object({ q: { pattern: '(?=(a+)+$)x' } });
    const path = realpathSync(protocolTool(f.tools, 'stale', schema));
    const stat = statSync(path, { bigint: true });
    const split = (ns: bigint) => [Number(ns / 1_000_000_000n), Number(ns % 1_000_000_000n)];
    const [mtimeSec, mtimeNsec] = split(stat.mtimeNs);
    const [ctimeSec, ctimeNsec] = split(stat.ctimeNs);
    mkdirSync(f.cacheDir);
    // Exactly what the previous format held for this very file: its description, as good.
    const entry = {
      fingerprint: { size: Number(stat.size), mtime_sec: mtimeSec, mtime_nsec: mtimeNsec, inode: Number(stat.ino), device: Number(stat.dev), ctime_sec: ctimeSec, ctime_nsec: ctimeNsec },
      description: { name: 'stale', description: 'The stale tool', input_schema: schema },
    };
    writeFileSync(join(f.cacheDir, 'executable-tools.json'), JSON.stringify({ version: 1, entries: { [path]: entry } }));
    const { tools, diagnostics } = await discover(f);
    expect(tools).toEqual([]);
    expect(diagnostics.map((d) => d.reason).join('\n')).toContain('/properties/q/pattern');
  });

  it(`with patterns that backtrack badly validates a ${BIG / 1000} kB input on the linear engine, off the JavaScript thread`, async () => {
    const f = fixture();
    protocolTool(
      f.tools,
      'nested',
      object(
        {
          a: { type: 'string', pattern: '(a+)+$' },
          b: { type: 'string', pattern: '^(\\w+\\s?)*$' },
          c: { type: 'string', format: 'regex' },
          // A possessive quantifier: what the linear engine makes of it is linear too.
          d: { type: 'string', pattern: '^a++$' },
        },
        { patternProperties: { '^(x+x+)+y$': { type: 'integer' } } },
      ),
    );
    const { tools } = await discover(f);
    const nested = tools.find((t) => t.name === 'custom_tool_nested')!;
    const long = 'a'.repeat(BIG);
    const refused = await execute(nested, { a: `${long}!`, b: `${long}!`, d: `${long}!`, [`${'x'.repeat(BIG)}y`]: 'not a number' }).then(
      () => null,
      (error: unknown) => error,
    );
    expect(refused).toBeInstanceOf(ToolgateError);
    expect((refused as ToolgateError).code).toBe('INVALID_INPUT');
    expect((refused as ToolgateError).message).toMatch(/at \/a:.*at \/b:.*at \/d:/s);
    expect(await execute(nested, { a: long, b: `${long} ${long}`, d: long, c: `(?=(a+)+$)${long}` })).toMatchObject({ result: { ok: true } });
  });

  it('prepare() checks asynchronously: a bad input rejects the promise, never throws synchronously', async () => {
    const f = fixture();
    protocolTool(f.tools, 'typed', object({ n: { type: 'integer' } }, { required: ['n'] }));
    const registry = new ExecutableToolRegistry({ dirs: [f.tools], workDir: f.work, cacheDir: f.cacheDir });
    await registry.refresh();
    const pending = registry.prepare('typed', { n: 'x'.repeat(BIG) });
    expect(pending).toBeInstanceOf(Promise);
    await expect(pending).rejects.toMatchObject({ code: 'INVALID_INPUT', message: expect.stringContaining('at /n:') });
    await expect(registry.prepare('missing', {})).rejects.toMatchObject({ code: 'TOOL_NOT_FOUND' });
    const run = await registry.prepare('typed', { n: 1 });
    expect((await run.start()).result).toEqual({ ok: true });
  });
});
