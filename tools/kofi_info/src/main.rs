// SPDX-License-Identifier: GPL-2.0

//! `kofi_info`: see `kofi_info --help` and Documentation/kofi/kofi-info.rst.

fn main() {
    let args: Vec<String> = std::env::args().skip(1).collect();
    let out = kofi_info::run(&args);
    print!("{}", out.stdout);
    eprint!("{}", out.stderr);
    std::process::exit(out.status);
}
