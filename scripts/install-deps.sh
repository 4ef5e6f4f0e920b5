#!/usr/bin/env bash
# Installs kci's host prerequisites from Debian packages. Idempotent: only
# missing packages are installed, so a warm machine pays one dpkg query.
set -euo pipefail

# Go is not installed from Debian: bookworm's golang is 1.19, and kci needs
# go.mod's go line. Say so, with what to do, before anything else.
check_go() {
  local need have go=""
  need=$(sed -n 's/^go \([0-9.]*\)$/\1/p' "$(dirname "$0")/../go.mod")
  if command -v go >/dev/null 2>&1; then go=$(command -v go)
  elif [ -x /usr/local/go/bin/go ]; then go=/usr/local/go/bin/go
  fi
  if [ -z "$go" ]; then
    echo "kci: Go $need or newer is needed and none was found (PATH, /usr/local/go/bin)." >&2
    echo "kci: install it from https://go.dev/dl/ into /usr/local/go (Debian bookworm's golang is 1.19, too old)." >&2
    exit 1
  fi
  have=$("$go" env GOVERSION 2>/dev/null | sed 's/^go//')
  if [ "$(printf '%s\n%s\n' "$need" "$have" | sort -V | head -1)" != "$need" ]; then
    echo "kci: $go is Go ${have:-of unknown version}; kci needs Go $need or newer (go.mod)." >&2
    echo "kci: install a newer one from https://go.dev/dl/ into /usr/local/go (Debian bookworm's golang is 1.19, too old)." >&2
    exit 1
  fi
}
check_go

pkgs=(
  build-essential make bc bison flex libelf-dev libssl-dev dwarves cpio
  xz-utils zstd git ccache rsync
  clang llvm libbpf-dev
  qemu-system-x86
  linux-source-6.12 linux-config-6.12
  chromium # headless: the tests open report.html in it
)

missing=()
for p in "${pkgs[@]}"; do
  dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q 'install ok installed' || missing+=("$p")
done
if [ ${#missing[@]} -eq 0 ]; then
  exit 0
fi
echo "kci: installing ${missing[*]}" >&2
SUDO=""
[ "$(id -u)" -eq 0 ] || SUDO=sudo
export DEBIAN_FRONTEND=noninteractive
$SUDO apt-get update -qq
$SUDO apt-get install -y -qq --no-install-recommends "${missing[@]}" >/dev/null
