#!/usr/bin/env bash
# Install what building and testing kofi needs on Debian 12. Idempotent: it
# says what it installs and skips what is already there.
set -euo pipefail

SUDO=
if [ "$(id -u)" != 0 ]; then SUDO=sudo; fi

PACKAGES=(clang-19 lld-19 llvm-19 libclang-19-dev flex bison bc libelf-dev
	  libssl-dev cpio busybox-static iproute2 kmod linux-source-6.12 make
	  xz-utils patch python3 gnuplot-nox linux-perf e2fsprogs nvme-cli)
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

# The newest kernel Debian ships as source, for KOFI_KERNEL=7.3 (issue 14):
# linux-source-7.3 from trixie-backports, and nothing else from that suite
# (pinned away).
if dpkg-query -W -f='${Status}' linux-source-7.3 2>/dev/null | grep -q 'install ok installed'; then
	echo "setup: linux-source-7.3 already installed"
else
	echo "setup: installing linux-source-7.3 from trixie-backports"
	$SUDO tee /etc/apt/sources.list.d/kofi-trixie-backports.sources >/dev/null <<-'EOS'
	Types: deb
	URIs: http://deb.debian.org/debian
	Suites: trixie-backports
	Components: main
	Signed-By: /usr/share/keyrings/debian-archive-keyring.gpg
	EOS
	$SUDO tee /etc/apt/preferences.d/kofi-trixie-backports >/dev/null <<-'EOS'
	Package: linux-source-7.3
	Pin: release n=trixie-backports
	Pin-Priority: 500

	Package: *
	Pin: release n=trixie-backports
	Pin-Priority: -10
	EOS
	$SUDO apt-get update -qq
	DEBIAN_FRONTEND=noninteractive $SUDO apt-get install -y -qq --no-install-recommends \
		-t trixie-backports linux-source-7.3 >/dev/null
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

# (The PATH may hold 7.3's first: KOFI_KERNEL=7.3 puts it there.)
have=$({ bindgen --version; "$HOME/.cargo/bin/bindgen" --version; } 2>/dev/null || true)
if grep -q '0\.69\.5' <<<"$have"; then
	echo "setup: bindgen 0.69.5 already installed"
else
	echo "setup: installing bindgen-cli 0.69.5"
	cargo install --locked bindgen-cli@0.69.5
fi
# 7.3's Rust needs bindgen 0.71.1 or later; it goes beside the 0.69.5 that
# 6.12 keeps, under the cache (scripts/lib/env.sh puts it on PATH for 7.3).
bindgen_new=${KOFI_CACHE:-$HOME/.cache/kofi}/bindgen-0.72
if [ -x "$bindgen_new/bin/bindgen" ] && "$bindgen_new/bin/bindgen" --version | grep -q '0\.72\.1'; then
	echo "setup: bindgen 0.72.1 (for 7.3) already installed"
else
	echo "setup: installing bindgen-cli 0.72.1 (for 7.3) in $bindgen_new"
	cargo install --locked --root "$bindgen_new" bindgen-cli@0.72.1
fi
if cargo fuzz --version >/dev/null 2>&1; then
	echo "setup: cargo-fuzz already installed"
else
	echo "setup: installing cargo-fuzz (fuzzes the sock wire parser)"
	cargo install --locked cargo-fuzz
fi
echo "setup: done"
