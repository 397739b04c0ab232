#!/usr/bin/env bash
# SPDX-License-Identifier: GPL-2.0
# `make check`'s DKMS test: Debian's dkms adds, builds and installs kofi
# (dkms.conf) against the kernel tree $1, in private dkms, source and install
# trees (the system's are not touched), and refuses a kernel without Rust
# with the reason. Prints one line per check: "ok - WHAT" or "not ok - WHAT".
set -uo pipefail
kdir=$1
. "$(dirname "$0")/lib/env.sh"
root=$KOFI_ROOT
version=$(sed -n 's/^PACKAGE_VERSION="\(.*\)"/\1/p' "$root/dkms.conf")
kver=$(cat "$kdir/include/config/kernel.release")
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
trees=(--dkmstree "$work/dkms" --sourcetree "$work/src" --installtree "$work/install")
mkdir -p "$work/dkms" "$work/install/$kver"

check() { # check WHAT COMMAND...: runs it, its output kept for a failure
	local what=$1
	shift
	if "$@" >"$work/out" 2>&1; then
		echo "ok - $what"
	else
		echo "not ok - $what"
		tail -25 "$work/out" | sed 's/^/# /'
	fi
}

# The source as git sees it (tracked and new files, with their changes).
src="$work/src/kofi-$version"
kofi_copy_tree "$src"

check "dkms add" dkms "${trees[@]}" add -m kofi -v "$version"
check "dkms build against $kver" \
	dkms "${trees[@]}" build -m kofi -v "$version" -k "$kver" --kernelsourcedir "$kdir"
built=$(find "$work/dkms/kofi/$version/$kver" -name '*.ko' -printf '%f\n' 2>/dev/null | sort |
	tr '\n' ' ')
check "dkms built kofi kofi_blk kofi_blkt kofi_sock kofi_verbs (got: $built)" \
	test "$built" = "kofi.ko kofi_blk.ko kofi_blkt.ko kofi_sock.ko kofi_verbs.ko "
check "dkms install" dkms "${trees[@]}" install -m kofi -v "$version" -k "$kver" \
	--kernelsourcedir "$kdir" --no-depmod
installed=$work/install/$kver/updates/dkms
check "installed under updates/dkms" test -f "$installed/kofi_sock.ko"
magic=$(modinfo -F vermagic "$installed/kofi.ko" 2>/dev/null | cut -d' ' -f1)
check "kofi.ko is for $kver (vermagic: $magic)" test "$magic" = "$kver"

# A kernel without Rust: refused before building, with the reason.
fake="$work/fake-kernel"
mkdir -p "$fake/include/config"
grep -v '^CONFIG_RUST=' "$kdir/.config" >"$fake/.config"
echo "$kver" >"$fake/include/config/kernel.release"
refused() {
	! "$root/scripts/dkms-check.sh" "$fake" 2>"$work/why" &&
		grep -q "CONFIG_RUST is not set" "$work/why"
}
check "a kernel without Rust refused: $(refused; cat "$work/why")" refused

# A kernel whose Rust wants a bindgen this machine lacks: refused, with the
# one it wants.
cp "$kdir/.config" "$fake/.config"
mkdir -p "$fake/rust" "$fake/scripts"
: >"$fake/rust/libkernel.rmeta"
sed -i 's/^CONFIG_BINDGEN_VERSION_TEXT=.*/CONFIG_BINDGEN_VERSION_TEXT="bindgen 99.0.0"/' "$fake/.config"
printf '#!/bin/sh\necho 99.0.0\n' >"$fake/scripts/min-tool-version.sh"
no_bindgen() {
	! "$root/scripts/dkms-check.sh" "$fake" 2>"$work/why" &&
		grep -q "no bindgen fits: its Rust wants 'bindgen 99.0.0'" "$work/why"
}
check "a kernel wanting another bindgen refused: $(no_bindgen; cat "$work/why")" no_bindgen
