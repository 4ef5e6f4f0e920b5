#!/usr/bin/env bash
# Installs kci's host prerequisites from Debian packages. Idempotent: only
# missing packages are installed, so a warm machine pays one dpkg query.
set -euo pipefail

pkgs=(
  build-essential make bc bison flex libelf-dev libssl-dev dwarves cpio
  xz-utils zstd git ccache rsync
  clang llvm libbpf-dev
  qemu-system-x86
  linux-source-6.12 linux-config-6.12
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
