#!/usr/bin/env bash
# Install what building and testing kofi needs on Debian 12. Idempotent: it
# says what it installs and skips what is already there.
set -euo pipefail

SUDO=
if [ "$(id -u)" != 0 ]; then SUDO=sudo; fi

PACKAGES=(clang-19 lld-19 llvm-19 libclang-19-dev flex bison bc libelf-dev
	  libssl-dev cpio busybox-static iproute2 kmod linux-source-6.12 make
	  xz-utils python3 gnuplot-nox linux-perf e2fsprogs nvme-cli)
# qemu and fio without recommends: they pull a desktop stack and python;
# dkms: its recommends are the distribution's kernel headers.
NORECOMMENDS=(qemu-system-x86 fio dkms)

missing=()
for p in "${PACKAGES[@]}" "${NORECOMMENDS[@]}"; do
	if dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q 'install ok installed'; then
		echo "setup: $p already installed"
	else
		missing+=("$p")
	fi
done

if [ ${#missing[@]} -gt 0 ]; then
	echo "setup: installing ${missing[*]}"
	$SUDO apt-get update -qq
	export DEBIAN_FRONTEND=noninteractive
	plain=() norec=()
	for p in "${missing[@]}"; do
		case " ${NORECOMMENDS[*]} " in
		*" $p "*) norec+=("$p") ;;
		*) plain+=("$p") ;;
		esac
	done
	[ ${#plain[@]} -eq 0 ] || $SUDO apt-get install -y -qq "${plain[@]}" >/dev/null
	[ ${#norec[@]} -eq 0 ] ||
		$SUDO apt-get install -y -qq --no-install-recommends "${norec[@]}" >/dev/null
fi

if ! command -v rustup >/dev/null 2>&1; then
	[ -x "$HOME/.cargo/bin/rustup" ] && export PATH="$HOME/.cargo/bin:$PATH"
fi
if ! command -v rustup >/dev/null 2>&1; then
	echo "setup: rustup not found; install Rust with rustup first" >&2
	exit 1
fi

if rustup component list --installed | grep -q '^rust-src'; then
	echo "setup: rust-src already installed"
else
	echo "setup: installing rust-src"
	rustup component add rust-src
fi
for c in rustfmt clippy; do
	if rustup component list --installed | grep -q "^$c"; then
		echo "setup: $c already installed"
	else
		echo "setup: installing $c"
		rustup component add "$c"
	fi
done

if command -v bindgen >/dev/null 2>&1 && bindgen --version | grep -q '0\.69\.5'; then
	echo "setup: bindgen 0.69.5 already installed"
else
	echo "setup: installing bindgen-cli 0.69.5"
	cargo install --locked bindgen-cli@0.69.5
fi
if cargo fuzz --version >/dev/null 2>&1; then
	echo "setup: cargo-fuzz already installed"
else
	echo "setup: installing cargo-fuzz (fuzzes the sock wire parser)"
	cargo install --locked cargo-fuzz
fi
echo "setup: done"
