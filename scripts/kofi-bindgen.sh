#!/bin/sh
# SPDX-License-Identifier: GPL-2.0
# The bindgen to build kofi with against the kernel tree $1: the one the
# kernel's own bindings were made by (its CONFIG_BINDGEN_VERSION_TEXT), else
# one at least the kernel's minimum (scripts/min-tool-version.sh). 6.12 and
# 7.3 want different ones (0.65.1 and 0.71.1 at least), so a machine that
# builds for both keeps two: the PATH's and those setup.sh installs under
# ~/.cache/kofi/bindgen-*/bin. Prints its path, or says why none fits and
# exits 1. The Kbuild calls it once a build; dkms-check.sh before one.
kdir=$1
cache=${KOFI_CACHE:-$HOME/.cache/kofi}
want=$(sed -n 's/^CONFIG_BINDGEN_VERSION_TEXT="\(.*\)"/\1/p' "$kdir/.config" 2>/dev/null)
min=$(cd "$kdir" 2>/dev/null && sh scripts/min-tool-version.sh bindgen 2>/dev/null)

candidates() {
	command -v bindgen
	for b in "$HOME"/.cargo/bin/bindgen "$cache"/bindgen-*/bin/bindgen; do
		[ -x "$b" ] && echo "$b"
	done
}
version_of() { "$1" --version 2>/dev/null | head -1; }

found="" fallback="" seen=""
for b in $(candidates | awk '!seen[$0]++'); do
	v=$(version_of "$b")
	seen="$seen${seen:+, }'$v' ($b)"
	if [ -n "$want" ] && [ "$v" = "$want" ]; then
		found=$b
		break
	fi
	n=${v#bindgen }
	if [ -z "$fallback" ] && [ -n "$min" ] &&
		[ "$(printf '%s\n%s\n' "$min" "$n" | sort -V | head -1)" = "$min" ]; then
		fallback=$b
	fi
done
found=${found:-$fallback}
if [ -z "$found" ]; then
	hint="cargo install bindgen-cli"
	[ -z "$want" ] || hint="$hint --version ${want#bindgen } --root $cache/bindgen-${want#bindgen }"
	echo "kofi: cannot build against $kdir: no bindgen fits: its Rust wants" \
		"'${want:-bindgen}' (${min:-some version} at least); this machine has ${seen:-none} ($hint)" >&2
	exit 1
fi
echo "$found"
