#!/bin/sh
# SPDX-License-Identifier: GPL-2.0
# DKMS's PRE_BUILD (dkms.conf): whether the kernel at $1 can build kofi, and
# if not, why, in one line a user can act on. kofi is Rust on
# Rust-for-Linux: the kernel must have Rust enabled and its Rust crates
# built, by the rustc and the LLVM this machine has, with a bindgen that
# fits it (kofi-bindgen.sh).
kdir=$1
no() {
	echo "kofi: cannot build against $kdir: $*" >&2
	exit 1
}

[ -f "$kdir/.config" ] || no "no .config there (not a configured kernel tree)"
grep -q '^CONFIG_RUST=y' "$kdir/.config" || no "the kernel has no Rust (CONFIG_RUST is not set)"
[ -f "$kdir/rust/libkernel.rmeta" ] ||
	no "its Rust crates are not built (no rust/libkernel.rmeta): headers without Rust support"
grep -q '^CONFIG_CC_IS_CLANG=y' "$kdir/.config" ||
	no "the kernel was built with gcc; kofi builds with LLVM=1 (clang), as the kernel's Rust needs"
want=$(sed -n 's/^CONFIG_RUSTC_VERSION_TEXT="\(.*\)"/\1/p' "$kdir/.config")
PATH=/usr/lib/llvm-19/bin:$HOME/.cargo/bin:$PATH
have=$(rustc --version 2>/dev/null) || no "no rustc on this machine"
[ "$have" = "$want" ] || no "the kernel's Rust was built by '$want', this machine has '$have'"
"$(dirname "$0")/kofi-bindgen.sh" "$kdir" >/dev/null || exit 1
exit 0
