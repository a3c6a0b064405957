#!/usr/bin/env bash
# Builds toolgate's npm packages for every supported Linux platform by cross-compiling from
# this machine (Linux x64 or arm64) with cargo-zigbuild, checks the binaries, and packs them
# with the main package:
#
#   npm/<platform>/toolgate.<platform>.node  the addon, release profile, stripped; the gnu
#                                            builds link against glibc 2.17's symbol versions
#   npm/<platform>/toolgate-sandbox          the sandbox launcher, a static musl executable
#                                            (one per architecture, shared by musl and gnu)
#   native/binding.js, native/binding.d.ts, dist/   the main package's generated files
#   target/release-packages/*.tgz            the tarballs to publish (platform packages first;
#                                            the main one by scripts/pack-main.mjs)
#
# Usage: scripts/build-release.sh [PLATFORM...]   (default: all four; this machine's own
# platform is always built, because the main package's binding.js is generated from it, and a
# gnu platform brings its musl sibling, whose static launcher it ships)
set -euo pipefail
cd "$(dirname "$0")/.."
source scripts/release-toolchain.sh

host="$(node --input-type=module -e "import { currentPlatform } from './native/load.js'; console.log(currentPlatform())")"
platforms=("$@")
[ ${#platforms[@]} -gt 0 ] || platforms=("${RELEASE_PLATFORMS[@]}")
platforms+=("$host")
# A gnu package ships the launcher of the musl build of its architecture.
for platform in "${platforms[@]}"; do
  addon_target "$platform" >/dev/null
  [[ "$platform" == *-gnu ]] && platforms+=("${platform%-gnu}-musl")
done
# Each platform once, musl before gnu.
mapfile -t platforms < <(printf '%s\n' "${platforms[@]}" | sort -u -t- -k3,3r -k2,2)

setup_release_toolchain
node scripts/release-versions.mjs

staging=target/release-staging
packages=target/release-packages
rm -rf "$staging" "$packages"
mkdir -p "$staging" "$packages"

# Per platform the addon, per architecture the launcher, each in a cargo run of its own. The
# launcher (crates/toolgate-sandbox, no toolgate-core in its graph) is a static musl executable
# that the musl and gnu packages of an architecture both ship; it is built with the musl
# platform, which comes first. It never shares a run with the addon: there its crate is built
# without the `launcher` feature, and the musl addon turns crt-static off.
for platform in "${platforms[@]}"; do
  launcher="$(launcher_target "$platform")"
  echo "== $platform: addon ($(addon_target "$platform"))"
  # napi's -x builds through cargo-zigbuild; --strip passes `-s` to the linker; for musl napi
  # turns crt-static off, since the addon is loaded into a Node that has musl's libc.so.
  npx napi build --platform --release --strip --cross-compile \
    --target "$(addon_target "$platform")" \
    --manifest-path crates/toolgate-node/Cargo.toml --output-dir "$staging/$platform" \
    --no-js --dts binding.d.ts --no-const-enum
  if [ "$(addon_target "$platform")" = "$launcher" ]; then
    echo "== $platform: launcher ($launcher, static)"
    CARGO_PROFILE_RELEASE_STRIP=symbols \
      cargo zigbuild --release -p toolgate-sandbox --target "$launcher"
  fi
  install -m 0755 "$staging/$platform/toolgate.$platform.node" "npm/$platform/"
  install -m 0755 "target/$launcher/release/toolgate-sandbox" "npm/$platform/toolgate-sandbox"
  cp LICENSE "npm/$platform/LICENSE"
done

echo "== main package"
cp "$staging/$host/binding.d.ts" native/binding.d.ts
node scripts/write-native-binding.mjs "npm/$host/toolgate.$host.node"
npm run build:ts

scripts/check-release-binaries.sh "${platforms[@]}"

echo "== pack"
for platform in "${platforms[@]}"; do
  npm pack --ignore-scripts --silent --pack-destination "$packages" "./npm/$platform" >/dev/null
done
# The main package: tracked files and build outputs only, a manifest without scripts
# (scripts/pack-main.mjs).
node scripts/pack-main.mjs "$packages" >/dev/null
ls -l "$packages"
