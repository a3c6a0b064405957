/**
 * Issue 22 §2 for MCP servers: a sandboxed process (here through `shell`) must not change code an
 * MCP server of the same worker runs at its next start — its scripts and what they import, by
 * every way a server names them: a symlink on the way to an import, `python3 -m pkg.module`, a
 * forged `.pyc` in `__pycache__`, a package made beside an imported module, `npm start` (the
 * script package.json names, on the host), a virtual environment in the work directory, a
 * package whose entry is its `main` requiring another package, a hook an `--env-file` loads
 * through `NODE_OPTIONS`, and a `bash -c` wrapper. Each scenario asks the server which version
 * of its code runs, attacks, loads the worker again and asks again.
 *
 * Needs the kernel view (`MOUNT_VIEW`, see protected-fixture.ts): the server code lies inside
 * the work directory.
 */
import { execFileSync } from 'node:child_process';
import { symlinkSync, realpathSync } from 'node:fs';
import { join } from 'node:path';
import { afterEach, describe, expect, it } from 'vitest';
import { loadWorker, type LoadedWorker, type NamedTool } from '../../ts/src/index.js';
import { tempDir } from '../helpers/fs.js';
import { call, writeFiles } from '../helpers/tools.js';
import { MOUNT_VIEW } from './protected-fixture.js';

const open: LoadedWorker[] = [];
afterEach(async () => { for (const w of open.splice(0)) await w.close(); });

const JS_SERVER = (importLine: string) => `${importLine}
import readline from 'node:readline';
const send = (m) => process.stdout.write(JSON.stringify({ jsonrpc: '2.0', ...m }) + '\\n');
readline.createInterface({ input: process.stdin }).on('line', (line) => {
  const r = JSON.parse(line); if (r.id === undefined) return;
  if (r.method === 'initialize') send({ id: r.id, result: { protocolVersion: r.params.protocolVersion, capabilities: { tools: {} }, serverInfo: { name: 's', version: '1' } } });
  else if (r.method === 'tools/list') send({ id: r.id, result: { tools: [{ name: 'version', description: 'v', inputSchema: { type: 'object', properties: {} } }] } });
  else if (r.method === 'tools/call') send({ id: r.id, result: { content: [{ type: 'text', text: String(v) }] } });
  else send({ id: r.id, error: { code: -32601, message: 'x' } });
});
`;
const CJS_SERVER = (requireLine: string) => JS_SERVER(requireLine).replace("import readline from 'node:readline';", "const readline = require('node:readline');");
const PY_SERVER = (importLine: string) => `import sys, json
${importLine}
def send(m):
    m['jsonrpc'] = '2.0'; sys.stdout.write(json.dumps(m) + '\\n'); sys.stdout.flush()
for line in sys.stdin:
    r = json.loads(line)
    if 'id' not in r: continue
    if r['method'] == 'initialize': send({'id': r['id'], 'result': {'protocolVersion': r['params']['protocolVersion'], 'capabilities': {'tools': {}}, 'serverInfo': {'name': 's', 'version': '1'}}})
    elif r['method'] == 'tools/list': send({'id': r['id'], 'result': {'tools': [{'name': 'version', 'description': 'v', 'inputSchema': {'type': 'object', 'properties': {}}}]}})
    elif r['method'] == 'tools/call': send({'id': r['id'], 'result': {'content': [{'type': 'text', 'text': str(v)}]}})
    else: send({'id': r['id'], 'error': {'code': -32601, 'message': 'x'}})
`;

function worker(server: object, hostServer = false) {
  return `name: victim\ninstructions: x\ntoolsets:\n  shell: { default: preApproved }\n  mcp:\n    servers: { srv: ${JSON.stringify(server)} }${hostServer ? '\n    sandbox: { mode: off }' : ''}\n    approval: { default: preApproved }\n`;
}

async function scenario(files: Record<string, string>, server: object, attackPy: string, setup?: (work: string) => void, hostServer = false) {
  const work = realpathSync(tempDir('toolgate-mcp-code-'));
  writeFiles(work, { ...files, 'worker.yaml': worker(server, hostServer), 'attack.py': attackPy });
  setup?.(work);
  const w1 = await loadWorker(join(work, 'worker.yaml'), {});
  open.push(w1);
  const before = await call(w1.tools.srv_version as NamedTool, {});
  const said = await call(w1.tools.shell as NamedTool, { command: 'python3 attack.py' });
  await w1.close(); open.splice(0);
  const w2 = await loadWorker(join(work, 'worker.yaml'), {});
  open.push(w2);
  const after = await call(w2.tools.srv_version as NamedTool, {});
  expect(JSON.stringify(before)).toContain('original');
  return { after: `${JSON.stringify(after)} (the attack said ${JSON.stringify(said)})` };
}

describe.runIf(MOUNT_VIEW)('MCP server code the agent cannot change (needs the kernel view: sandboxSupport().view)', () => {
  it('symlinked folder on the way to an import', { timeout: 120_000 }, async () => {
    const r = await scenario(
      { 'server.mjs': JS_SERVER("import { v } from './lib/v.mjs';"), 'real_lib/v.mjs': "export const v = 'original';\n" },
      { command: 'node', args: ['server.mjs'] },
      "import os\nos.makedirs('evil', exist_ok=True)\nopen('evil/v.mjs','w').write(\"export const v = 'PWNED';\\n\")\nos.unlink('lib')\nos.symlink('evil', 'lib')\nprint('swapped')\n",
      (work) => symlinkSync('real_lib', join(work, 'lib')),
    );
    expect(r.after).toContain('original');
  });

  it('python -m pkg.module: the module and its package', { timeout: 120_000 }, async () => {
    const r = await scenario(
      { 'srv/__init__.py': '', 'srv/server.py': PY_SERVER('from .tools import v'), 'srv/tools.py': "v = 'original'\n" },
      { command: 'python3', args: ['-m', 'srv.server'] },
      "open('srv/tools.py','w').write(\"v = 'PWNED'\\n\")\nprint('written')\n",
    );
    expect(r.after).toContain('original');
  });

  it('pyc in __pycache__ beside a protected module', { timeout: 120_000 }, async () => {
    const r = await scenario(
      { 'server.py': PY_SERVER('from helpers import v'), 'helpers.py': "v = 'original'\n" },
      { command: 'python3', args: ['server.py'] },
      `import os, importlib.util, importlib._bootstrap_external as be
st = os.stat('helpers.py')
code = compile("v = 'PWNED'\\n", os.path.abspath('helpers.py'), 'exec')
data = be._code_to_timestamp_pyc(code, st.st_mtime, st.st_size)
target = importlib.util.cache_from_source('helpers.py')
os.makedirs(os.path.dirname(target), exist_ok=True)
try: os.unlink(target)
except FileNotFoundError: pass
open(target, 'wb').write(data)
print('pyc', target)
`,
    );
    expect(r.after).toContain('original');
  });

  it('package folder planted beside a protected module', { timeout: 120_000 }, async () => {
    const r = await scenario(
      { 'server.py': PY_SERVER('from helpers import v'), 'helpers.py': "v = 'original'\n" },
      { command: 'python3', args: ['server.py'] },
      "import os\nos.makedirs('helpers', exist_ok=True)\nopen('helpers/__init__.py','w').write(\"v = 'PWNED'\\n\")\nprint('planted')\n",
    );
    expect(r.after).toContain('original');
  });

  it('npm start on the host: the script package.json runs', { timeout: 120_000 }, async () => {
    const r = await scenario(
      { 'package.json': '{"name":"x","scripts":{"start":"node server.cjs"}}', 'server.cjs': CJS_SERVER("const { v } = require('./lib.cjs');"), 'lib.cjs': "exports.v = 'original';\n" },
      { command: 'npm', args: ['start', '--silent'] },
      "open('lib.cjs','w').write(\"exports.v = 'PWNED';\\n\")\nprint('written')\n",
      undefined, true,
    );
    expect(r.after).toContain('original');
  });

  it('venv python: a .pth in site-packages', { timeout: 180_000 }, async () => {
    const r = await scenario(
      { 'server.py': PY_SERVER('from helpers import v'), 'helpers.py': "v = 'original'\n" },
      { command: '.venv/bin/python', args: ['server.py'] },
      `import glob
sp = glob.glob('.venv/lib/python3*/site-packages')[0]
open(sp + '/zz.pth', 'w').write("import sys, types; m = types.ModuleType('helpers'); m.v = 'PWNED'; sys.modules['helpers'] = m\\n")
print('pth', sp)
`,
      (work) => execFileSync('python3', ['-m', 'venv', '--without-pip', join(work, '.venv')]),
    );
    expect(r.after).toContain('original');
  });

  it('a package whose entry is its main: the package it requires', { timeout: 120_000 }, async () => {
    const r = await scenario(
      { 'server.cjs': CJS_SERVER("const { v } = require('a');"), 'node_modules/a/package.json': '{"name":"a","main":"dist/main.js"}', 'node_modules/a/dist/main.js': "module.exports = require('b');\n", 'node_modules/b/index.js': "exports.v = 'original';\n" },
      { command: 'node', args: ['server.cjs'] },
      "open('node_modules/b/index.js','w').write(\"exports.v = 'PWNED';\\n\")\nprint('written')\n",
    );
    expect(r.after).toContain('original');
  });

  it('an --env-file whose NODE_OPTIONS requires a hook', { timeout: 120_000 }, async () => {
    const r = await scenario(
      { '.env': 'NODE_OPTIONS=--require ./hook.cjs\n', 'hook.cjs': "globalThis.v = 'original';\n", 'server.mjs': JS_SERVER('const v = globalThis.v;') },
      { command: 'node', args: ['--env-file=.env', 'server.mjs'] },
      "open('hook.cjs','w').write(\"globalThis.v = 'PWNED';\\n\")\nprint('written')\n",
    );
    expect(r.after).toContain('original');
  });

  it('a bash -c wrapper: the script it runs and what that imports', { timeout: 120_000 }, async () => {
    const r = await scenario(
      { 'server.mjs': JS_SERVER("import { v } from './lib.mjs';"), 'lib.mjs': "export const v = 'original';\n" },
      { command: 'bash', args: ['-c', 'exec node server.mjs'] },
      "open('lib.mjs','w').write(\"export const v = 'PWNED';\\n\")\nprint('written')\n",
    );
    expect(r.after).toContain('original');
  });
});
