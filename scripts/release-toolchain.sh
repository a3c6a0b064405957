# Sourced by the release scripts: the platform table, the limits the binaries are checked
# against, and the cross-compiling toolchain (Rust targets from rustup; zig and cargo-zigbuild
# from PyPI, in a virtualenv under ~/.cache/toolgate-release so nothing is installed system-wide).

# The oldest glibc the gnu addons may need (RHEL/CentOS 7, Amazon Linux 2, Ubuntu 14.04+).
GLIBC_FLOOR=2.17
# Size budgets in bytes (stripped). Today: addon 10.4-11.4 MB, launcher 0.39-0.41 MB.
ADDON_BUDGET=$((13 * 1024 * 1024))
LAUNCHER_BUDGET=$((1024 * 1024))
RELEASE_PLATFORMS=(linux-x64-gnu linux-x64-musl linux-arm64-gnu linux-arm64-musl)

ZIGLANG_VERSION=0.17.1
CARGO_ZIGBUILD_VERSION=0.24.0

# The Rust target the addon of a platform is built for (gnu: with the glibc version zig links
# against).
addon_target() {
  case "$1" in
    linux-x64-gnu) echo "x86_64-unknown-linux-gnu.$GLIBC_FLOOR" ;;
    linux-x64-musl) echo x86_64-unknown-linux-musl ;;
    linux-arm64-gnu) echo "aarch64-unknown-linux-gnu.$GLIBC_FLOOR" ;;
    linux-arm64-musl) echo aarch64-unknown-linux-musl ;;
    *) echo "release: unknown platform '$1' (known: ${RELEASE_PLATFORMS[*]})" >&2; return 1 ;;
  esac
}

# The launcher is a static musl executable, so one build per architecture serves both libcs.
launcher_target() {
  case "$1" in
    linux-x64-*) echo x86_64-unknown-linux-musl ;;
    linux-arm64-*) echo aarch64-unknown-linux-musl ;;
    *) echo "release: unknown platform '$1'" >&2; return 1 ;;
  esac
}

# Puts zig and cargo-zigbuild on PATH and adds the Rust targets.
setup_release_toolchain() {
  local cache="${TOOLGATE_RELEASE_CACHE:-${XDG_CACHE_HOME:-$HOME/.cache}/toolgate-release}"
  local venv="$cache/venv"
  if [ ! -x "$venv/bin/python3" ]; then
    mkdir -p "$cache"
    python3 -m venv "$venv" || {
      echo "release: could not create a Python virtualenv in $venv (on Debian: apt-get install python3-venv)" >&2
      return 1
    }
  fi
  "$venv/bin/python3" -m pip install --quiet --disable-pip-version-check \
    "ziglang==$ZIGLANG_VERSION" "cargo-zigbuild==$CARGO_ZIGBUILD_VERSION"
  export PATH="$venv/bin:$PATH"
  rustup target add x86_64-unknown-linux-gnu x86_64-unknown-linux-musl \
    aarch64-unknown-linux-gnu aarch64-unknown-linux-musl >/dev/null
}
