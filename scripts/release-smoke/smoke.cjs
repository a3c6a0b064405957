// The CommonJS smoke test of an installed toolgate: `require('toolgate')` loads the ES module
// through Node's require(esm) (Node >= 20.19 and >= 22.12), which works because nothing in
// toolgate's import graph uses top-level await. Run by scripts/test-release.sh in a fresh app.
const assert = require('node:assert/strict');
const { tmpdir } = require('node:os');

const toolgate = require('toolgate');
assert.equal(typeof toolgate.exec, 'function');
assert.equal(typeof toolgate.loadWorker, 'function');
assert.equal(toolgate.VERSION, require('toolgate/package.json').version);

toolgate
  .exec({ command: 'echo', args: ['hello from require'], cwd: tmpdir(), env: { PATH: '/usr/bin:/bin' } })
  .then((result) => {
    assert.equal(result.stdout, 'hello from require\n');
    console.log(`smoke (CommonJS require, node ${process.version}): passed`);
  })
  .catch((error) => {
    console.error(error);
    process.exitCode = 1;
  });
