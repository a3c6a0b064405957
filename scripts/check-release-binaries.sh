#!/usr/bin/env bash
# Checks the binaries in npm/<platform>/ before they are packed: the right ELF machine, linked
# as intended (addon: a shared object; launcher: static), stripped, within the size budget,
# and for gnu addons no glibc symbol version above the floor (`objdump -T`). musl addons must
# need nothing of glibc. Prints one line per binary; exits 1 after listing every failure.
# Usage: scripts/check-release-binaries.sh [PLATFORM...]   (default: all four)
set -euo pipefail
cd "$(dirname "$0")/.."
source scripts/release-toolchain.sh

platforms=("$@")
[ ${#platforms[@]} -gt 0 ] || platforms=("${RELEASE_PLATFORMS[@]}")
failures=0
fail() {
  echo "  FAIL $1" >&2
  failures=$((failures + 1))
}
version_le() { [ "$(printf '%s\n%s\n' "$1" "$2" | sort -V | head -n1)" = "$1" ]; }

for platform in "${platforms[@]}"; do
  addon_target "$platform" >/dev/null
  case "$platform" in
    linux-x64-*) machine='x86-64' ;;
    linux-arm64-*) machine='ARM aarch64' ;;
  esac
  addon="npm/$platform/toolgate.$platform.node"
  launcher="npm/$platform/toolgate-sandbox"
  for file in "$addon" "$launcher"; do
    [ -f "$file" ] || { fail "$file is missing (run scripts/build-release.sh $platform)"; continue; }
    description="$(file -b "$file")"
    size=$(stat -c %s "$file")
    budget=$ADDON_BUDGET
    [ "$file" = "$launcher" ] && budget=$LAUNCHER_BUDGET
    [[ "$description" == *"ELF 64-bit LSB"*", $machine,"* ]] || fail "$file is not a 64-bit $machine ELF file: $description"
    [[ "$description" == *", stripped"* ]] || fail "$file is not stripped: $description"
    [ "$size" -le "$budget" ] || fail "$file is $size bytes, over its budget of $budget"
    [ -x "$file" ] || fail "$file is not executable (mode $(stat -c %a "$file"))"
    if [ "$file" = "$launcher" ]; then
      # Static (static-pie): no program interpreter and no shared library it needs.
      if readelf -lW "$file" | grep -q 'program interpreter' || readelf -d "$file" | grep -q '(NEEDED)'; then
        fail "$file is not static: $(readelf -lW "$file" | grep -o 'interpreter: [^]]*') $(readelf -d "$file" | grep -o 'NEEDED.*' | tr '\n' ' ')"
      fi
      echo "  $file: $size bytes (budget $budget), static ($description)"
      continue
    fi
    [[ "$description" == *"shared object"* ]] || fail "$file is not a shared object: $description"
    symbols="$(objdump -T "$file")"
    glibc="$(grep -o 'GLIBC_[0-9][0-9.]*' <<<"$symbols" | sed 's/^GLIBC_//' | sort -uV | tail -n1 || true)"
    needed="$(readelf -d "$file" | sed -n 's/.*(NEEDED).*\[\(.*\)\]/\1/p' | tr '\n' ' ')"
    case "$platform" in
      *-gnu)
        if [ -z "$glibc" ]; then
          fail "$file: objdump -T shows no GLIBC symbol versions (is it a glibc build?)"
        elif ! version_le "$glibc" "$GLIBC_FLOOR"; then
          fail "$file needs GLIBC_$glibc, above the floor GLIBC_$GLIBC_FLOOR: $(grep "GLIBC_$glibc" <<<"$symbols" | awk '{print $NF}' | tr '\n' ' ')"
        fi
        echo "  $file: $size bytes (budget $budget), highest symbol GLIBC_$glibc (floor $GLIBC_FLOOR), needs: $needed"
        ;;
      *-musl)
        [ -z "$glibc" ] || fail "$file (musl) has glibc symbol versions up to GLIBC_$glibc"
        for library in $needed; do
          case "$library" in
            libc.so | libc.musl-*.so.1 | libgcc_s.so.1) ;;
            *) fail "$file (musl) needs $library, which a musl system does not have as such" ;;
          esac
        done
        echo "  $file: $size bytes (budget $budget), needs: $needed"
        ;;
    esac
  done
done

if [ "$failures" -gt 0 ]; then
  echo "check-release-binaries: $failures problem(s)" >&2
  exit 1
fi
echo "check-release-binaries: ${#platforms[@]} platform(s) OK"
