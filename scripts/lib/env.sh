# Sourced by kofi's scripts: toolchain on PATH, cache location, kernel source.
# shellcheck shell=bash

KOFI_ROOT=$(cd "$(dirname "${BASH_SOURCE[0]}")/../.." && pwd)
KOFI_CACHE=${KOFI_CACHE:-$HOME/.cache/kofi}
export KOFI_ROOT KOFI_CACHE

# clang-19's tools first, then rustup's cargo bin.
export PATH="/usr/lib/llvm-19/bin:$HOME/.cargo/bin:$PATH"

KOFI_JOBS=${KOFI_JOBS:-$(($(nproc) + 1))}

# The kernel kofi builds and tests against: 6.12 (Debian 12's LTS, the
# default) or 7.3 (the newest Debian ships as source, from trixie-backports).
KOFI_KERNEL=${KOFI_KERNEL:-6.12}
case "$KOFI_KERNEL" in
6.12 | 7.3) ;;
*) echo "kofi: KOFI_KERNEL=$KOFI_KERNEL: 6.12 or 7.3" >&2; exit 1 ;;
esac
export KOFI_KERNEL
KOFI_KSRC_TARBALL=${KOFI_KSRC_TARBALL:-/usr/src/linux-source-$KOFI_KERNEL.tar.xz}

# 7.3's Rust needs bindgen 0.71.1 or later; 6.12 keeps the 0.69.5 it was
# built with. setup.sh installs the newer one beside, under the cache; the
# kernel's build finds it on the PATH, kofi's modules through
# scripts/kofi-bindgen.sh whatever the PATH.
KOFI_BINDGEN_NEW=$KOFI_CACHE/bindgen-0.72/bin
if [ "$KOFI_KERNEL" != 6.12 ]; then
	export PATH="$KOFI_BINDGEN_NEW:$PATH"
fi

# A copy of the tree as git sees it (tracked and new files, build/ left
# out), fresh in $1: modules for a second kernel (perf, 7.3) are built there,
# as the tree's own objects are the debug 6.12 kernel's.
kofi_copy_tree() {
	rm -rf "$1"
	mkdir -p "$1"
	(cd "$KOFI_ROOT" && git ls-files -co --exclude-standard | grep -v '^build/' |
		cpio -pdm --quiet "$1")
}

die() {
	echo "kofi: $*" >&2
	exit 1
}

# Echo the Debian package version of the kernel source, e.g. 6.12.117-1~deb12u1.
kofi_kernel_pkg_version() {
	dpkg-query -W -f='${Version}' "linux-source-$KOFI_KERNEL" 2>/dev/null || echo unknown
}

# The config fragments of a profile, merged over tinyconfig in this order: the
# base, the profile, then what this kernel version spells differently, for
# every profile (kernel-7.3.config) and for this one (debug-7.3.config); one
# path a line.
kofi_fragments() {
	local d=$KOFI_ROOT/scripts/kconfig f
	printf '%s\n' "$d/base.config" "$d/$1.config"
	for f in "$d/kernel-$KOFI_KERNEL.config" "$d/$1-$KOFI_KERNEL.config"; do
		[ ! -f "$f" ] || echo "$f"
	done
}

# The fixes kofi's kernels carry over Debian's source (upstream bugs the
# suites met), applied in order: those at the top of kernel-patches/ to
# every kernel, those in kernel-patches/$KOFI_KERNEL/ to that one only (a
# bug only it shows); one path a line.
kofi_kernel_patches() {
	ls "$KOFI_ROOT"/scripts/kernel-patches/*.patch \
		"$KOFI_ROOT/scripts/kernel-patches/$KOFI_KERNEL"/*.patch 2>/dev/null || true
}

# Directory of the cached kernel tree for a profile (debug or perf). The key is
# the source version and a hash of the fragments and the patches.
kofi_kdir_for() {
	local profile=$1 hash
	hash=$(cat $(kofi_fragments "$profile") $(kofi_kernel_patches) | sha256sum | cut -c1-12)
	echo "$KOFI_CACHE/kernel/linux-$(kofi_kernel_pkg_version | tr '~' '_')-$profile-$hash"
}
