# Sourced by bench.sh and profile.sh: sets up, builds (or reuses) the perf
# kernel and builds kofi's modules for it in a copy of the tree (the tree's
# own objects are built for the debug kernel). Sets $perf (the kernel tree)
# and $src (the copy).
perf_build() {
	scripts/setup.sh | grep -v 'already installed' || true
	perf=$(scripts/build-kernel.sh perf)
	src="$KOFI_ROOT/build/bench-src"
	kofi_copy_tree "$src"
	echo "=== modules for the perf kernel"
	make -C "$perf" M="$src" LLVM=1 -j"$KOFI_JOBS" modules >"$KOFI_ROOT/build/bench-build.log" 2>&1 ||
		{ tail -30 "$KOFI_ROOT/build/bench-build.log"; exit 1; }
}
