# SPDX-License-Identifier: GPL-2.0
# Included by the Kbuild file of every Rust provider: generates
# $(obj)/abi_generated.rs, the kofi ABI (and what the provider layer needs of
# the kernel) from $(src)/$(KOFI_BINDINGS_HEADER), with the kernel's own
# compiler flags and bindgen parameters (with what the layer's sockaddr.rs
# needs: the header includes <linux/socket.h>, <linux/in.h> and
# <linux/in6.h>; less 7.3's CFI encodings and Zeroable derives, whose
# feature and crate out-of-tree code cannot use). A provider adds functions,
# types and opaque types of its own in KOFI_BINDGEN_EXTRA (bindgen options).

quiet_cmd_kofi_provider_bindgen = BINDGEN $@
      cmd_kofi_provider_bindgen = \
	$(KOFI_BINDGEN) $< --rust-target 1.68 --use-core --with-derive-default \
		--ctypes-prefix ffi --no-layout-tests --no-debug '.*' \
		$(shell grep -Ev '^\#|^$$|cfi_encoding|MaybeZeroable' $(srctree)/rust/bindgen_parameters) \
		--allowlist-var 'FI_.*|KOFI_.*|ITER_.*|AF_INET6?' \
		--allowlist-type 'fi_.*|fid.*|kofi_.*|__kernel_sockaddr_storage|sockaddr_in6?' \
		--allowlist-function 'fi_.*|kofi_.*|_copy_to_iter|_copy_from_iter|iov_iter_kvec|iov_iter_bvec|iov_iter_advance|kstrdup|kfree' \
		--opaque-type 'module|page|spinlock|lock_class_key|iov_iter|seq_file' \
		$(KOFI_BINDGEN_EXTRA) \
		-o $@ -- $(c_flags) -I$(src) -D__BINDGEN__ -DMODULE

$(obj)/abi_generated.rs: $(src)/$(KOFI_BINDINGS_HEADER) FORCE
	$(call if_changed_dep,kofi_provider_bindgen)

targets += abi_generated.rs

# abi.rs finds the generated file through this variable: the build directory
# differs per module while the source is shared.
$(obj)/%.o: export KOFI_BINDINGS_DIR = $(abspath $(obj))
