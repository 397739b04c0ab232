#!/usr/bin/env bash
# Build (or reuse) kofi's kernel for a profile and print its tree's path.
#   [KOFI_KERNEL=6.12|7.3] scripts/build-kernel.sh [--path] [debug|perf]
# With --path it only prints where the tree is (or would be).
# The tree lives under $KOFI_CACHE, keyed by kernel version and a hash of the
# fragments and scripts/kernel-patches/ (fixes carried over Debian's source),
# so an unchanged config never rebuilds.
set -euo pipefail
. "$(dirname "$0")/lib/env.sh"

print_only=0
if [ "${1:-}" = --path ]; then print_only=1; shift; fi
profile=${1:-debug}
[ -f "$KOFI_ROOT/scripts/kconfig/$profile.config" ] || die "unknown profile '$profile'"
[ -f "$KOFI_KSRC_TARBALL" ] || die "$KOFI_KSRC_TARBALL missing: run scripts/setup.sh"

kdir=$(kofi_kdir_for "$profile")
if [ $print_only = 1 ]; then echo "$kdir"; exit 0; fi
if [ -f "$kdir/.kofi-built" ]; then
	echo "build-kernel: reusing $kdir" >&2
	echo "$kdir"
	exit 0
fi

log="$KOFI_CACHE/kernel/build-$KOFI_KERNEL-$profile.log"
mkdir -p "$KOFI_CACHE/kernel"
echo "build-kernel: building the $KOFI_KERNEL $profile kernel in $kdir (about 6 minutes; log: $log)" >&2
rm -rf "$kdir"
mkdir -p "$kdir"
tar -xJf "$KOFI_KSRC_TARBALL" -C "$kdir" --strip-components=1
: >"$log"
while IFS= read -r fix; do
	patch -d "$kdir" -p1 -s -N <"$fix" >>"$log" 2>&1 ||
		die "$(basename "$fix") does not apply to $KOFI_KERNEL; see $log"
done < <(kofi_kernel_patches)

mapfile -t frags < <(kofi_fragments "$profile")
{
	make -C "$kdir" LLVM=1 tinyconfig
	"$kdir/scripts/kconfig/merge_config.sh" -m -O "$kdir" "$kdir/.config" "${frags[@]}"
	make -C "$kdir" LLVM=1 olddefconfig
} >>"$log" 2>&1 || die "configuring failed; see $log"

# merge_config only warns when Kconfig drops a requested option (a missing
# dependency, as SLUB_TINY drops KASAN). Fail instead: a silently weaker
# test kernel is worse than none.
bad=0
while IFS= read -r line; do
	case "$line" in
	CONFIG_*=*)
		grep -qxF "$line" "$kdir/.config" || { echo "build-kernel: wanted $line, got: $(grep "^${line%%=*}=" "$kdir/.config" || echo unset)" >&2; bad=1; }
		;;
	"# CONFIG_"*" is not set")
		opt=${line#\# }; opt=${opt%% *}
		! grep -q "^$opt=" "$kdir/.config" || { echo "build-kernel: wanted $opt unset" >&2; bad=1; }
		;;
	esac
done < <(cat "${frags[@]}" | tac | awk '
	# An option a later fragment sets again is checked for its last value.
	{ o = $0; sub(/^# /, "", o); sub(/[= ].*/, "", o) }
	o ~ /^CONFIG_/ && !seen[o]++' | tac)
[ $bad = 0 ] || die "the config lost options it was asked for; see above"

make -C "$kdir" LLVM=1 -j"$KOFI_JOBS" all >>"$log" 2>&1 ||
	{ tail -30 "$log" >&2; die "kernel build failed; see $log"; }

touch "$kdir/.kofi-built"
# Trees of this kernel and profile built from older fragments or an older
# source package are of no further use; the other kernel's trees stay.
for old in "$KOFI_CACHE"/kernel/linux-"$KOFI_KERNEL".*-"$profile"-*; do
	[ "$old" = "$kdir" ] || rm -rf "$old"
done
echo "build-kernel: built $kdir" >&2
echo "$kdir"
