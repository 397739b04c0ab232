# SPDX-License-Identifier: GPL-2.0
# kofi: user-facing targets. What gets built is listed in `Kbuild`.
#
#   make          build every module against KDIR (default: kofi's cached kernel)
#                 and the user tool kofi_info (target/release/kofi_info)
#   make check    the whole test suite (sets up and builds what it needs)
#   make demo     boot a VM, load kofi, run a sample consumer, show it
#   make bench    kofi against raw kernel TCP and raw verbs on the perf kernel
#   make bench-ab BEFORE=<rev>  the tree's kofi_sock against <rev>'s, in one VM
#                 (KOFI_AB_STORAGE=1: kofi_blk's, NVMe-oF as the baseline;
#                 KOFI_AB_TRANSPORT=tcp|siw|rxe; without STORAGE,
#                 KOFI_AB_TRANSPORT=siw|rxe: kofi_verbs' against raw verbs)
#   make profile  perf in the guest: where kofi and the baselines spend time
#   make setup    install the toolchain (Debian 12)
#   make kernel   build (or reuse) the cached kernel; PROFILE=debug|perf
#   make clean
#
# KOFI_KERNEL=6.12|7.3 (default 6.12) picks the kernel of make, make kernel
# and make bench; make check builds against both and runs suites on both.

PROFILE ?= debug
export PATH := /usr/lib/llvm-19/bin:$(HOME)/.cargo/bin:$(PATH)

# KDIR: a Rust-enabled kernel build tree. Without one, kofi builds its own
# (cached under $KOFI_CACHE, default ~/.cache/kofi) on first use.
ifeq ($(origin KDIR),undefined)
KDIR = $(eval KDIR := $$(shell scripts/build-kernel.sh $(PROFILE)))$(KDIR)
endif

KBUILD_ARGS = -C $(KDIR) M=$(CURDIR) LLVM=1

all: modules tools

.PHONY: all modules tools check demo bench bench-ab profile setup kernel clean

modules:
	$(MAKE) $(KBUILD_ARGS) modules

tools:
	cargo build --release -p kofi_info

check:
	scripts/check.sh

demo:
	scripts/demo.sh

bench:
	scripts/bench.sh

bench-ab:
	BEFORE=$(BEFORE) KOFI_AB_STORAGE=$(KOFI_AB_STORAGE) KOFI_AB_TRANSPORT=$(KOFI_AB_TRANSPORT) \
		scripts/bench-ab.sh

profile:
	scripts/profile.sh

setup:
	scripts/setup.sh

kernel:
	scripts/build-kernel.sh $(PROFILE)

clean:
	@kdir="$${KDIR:-$$(scripts/build-kernel.sh --path $(PROFILE))}"; \
	if [ -f "$$kdir/Makefile" ]; then \
		$(MAKE) -C "$$kdir" M=$(CURDIR) LLVM=1 clean; \
	else \
		find . -path ./target -prune -o \( -name '*.o' -o -name '*.ko' -o -name '*.mod' \
			-o -name '*.mod.c' -o -name '.*.cmd' -o -name 'modules.order' \
			-o -name 'Module.symvers' \) -print | xargs -r rm -f; \
	fi
	rm -rf build kofi/abi_generated.rs
	cargo clean
