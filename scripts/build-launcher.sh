#!/usr/bin/env bash
# Builds the sandbox launcher (crates/toolgate-sandbox) and copies it next to the .node addon in
# native/, where the addon looks for it. Release builds link it statically (crt-static): it is
# started once per sandboxed call, and without the dynamic loader it starts about a third
# faster. The crate depends on no toolgate crate: this compiles it and a few small crates (libc,
# rustix, landlock, seccompiler), in well under a minute from scratch.
# Usage: scripts/build-launcher.sh release|debug
set -euo pipefail
cd "$(dirname "$0")/.."
profile="${1:-release}"
target_dir="${CARGO_TARGET_DIR:-target}"
mkdir -p native
if [ "$(uname -s)" != Linux ]; then
  echo "build-launcher: the kernel sandbox exists only on Linux; no launcher built" >&2
  exit 0
fi
if [ "$profile" = release ]; then
  host="$(rustc -vV | sed -n 's/^host: //p')"
  RUSTFLAGS="${RUSTFLAGS:-} -C target-feature=+crt-static" \
    cargo build --release -p toolgate-sandbox --target "$host"
  built="$target_dir/$host/release/toolgate-sandbox"
else
  cargo build -p toolgate-sandbox
  built="$target_dir/debug/toolgate-sandbox"
fi
install -m 0755 "$built" native/toolgate-sandbox
echo "build-launcher: native/toolgate-sandbox ($profile)"
