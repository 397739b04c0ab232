# Sourced by kofi's scripts: toolchain on PATH, cache location, kernel source.
# shellcheck shell=bash

KOFI_ROOT=$(cd "$(dirname "${BASH_SOURCE[0]}")/../.." && pwd)
KOFI_CACHE=${KOFI_CACHE:-$HOME/.cache/kofi}
export KOFI_ROOT KOFI_CACHE

# clang-19's tools first, then rustup's cargo bin.
export PATH="/usr/lib/llvm-19/bin:$HOME/.cargo/bin:$PATH"

KOFI_JOBS=${KOFI_JOBS:-$(($(nproc) + 1))}
KOFI_KSRC_TARBALL=${KOFI_KSRC_TARBALL:-/usr/src/linux-source-6.12.tar.xz}

die() {
	echo "kofi: $*" >&2
	exit 1
}

# Echo the Debian package version of the kernel source, e.g. 6.12.117-1~deb12u1.
kofi_kernel_pkg_version() {
	dpkg-query -W -f='${Version}' linux-source-6.12 2>/dev/null || echo unknown
}

# Directory of the cached kernel tree for a profile (debug or perf). The key is
# the source version and a hash of the fragments.
kofi_kdir_for() {
	local profile=$1 hash
	hash=$(cat "$KOFI_ROOT/scripts/kconfig/base.config" \
		"$KOFI_ROOT/scripts/kconfig/$profile.config" | sha256sum | cut -c1-12)
	echo "$KOFI_CACHE/kernel/linux-$(kofi_kernel_pkg_version | tr '~' '_')-$profile-$hash"
}
