//! `kofi-vmlog <run dir>...` | `kofi-vmlog --boot-splat <console.log>` |
//! `kofi-vmlog --markers`
//!
//! Each run directory holds what one VM left: `console.log` (kernel console),
//! `results.ktap` (the guest's results channel) and, when the runner had to
//! kill the guest, a file `timed-out`. Prints each test case's verdict and a
//! last line `N passed, N failed, N skipped` over all runs; exits 1 when any
//! run failed (a failed case, a splat, a guest that did not finish), 2 on bad
//! usage.
//!
//! `--boot-splat` exits 0 (and prints the line) when the kernel splatted
//! before the guest started: a failed boot, which the runner retries.
//!
//! `--markers` prints the splat markers, one a line (`grep -F -f` takes
//! them): the guest looks for them before it runs anything.

use kofi_vmlog::{splat, RunVerdict};
use std::path::Path;
use std::process::ExitCode;

fn read(path: &Path) -> String {
    std::fs::read(path)
        .map(|b| String::from_utf8_lossy(&b).into_owned())
        .unwrap_or_default()
}

fn main() -> ExitCode {
    let dirs: Vec<String> = std::env::args().skip(1).collect();
    if dirs == ["--markers"] {
        for m in splat::MARKERS {
            println!("{m}");
        }
        return ExitCode::SUCCESS;
    }
    if let [flag, console] = dirs.as_slice() {
        if flag == "--boot-splat" {
            return match splat::boot_splat(&read(Path::new(console))) {
                Some(s) => {
                    println!("{}: {}", s.line_no, s.line);
                    ExitCode::SUCCESS
                }
                None => ExitCode::FAILURE,
            };
        }
    }
    if dirs.is_empty() || dirs.iter().any(|d| d.starts_with('-')) {
        eprintln!("usage: kofi-vmlog <run dir>...");
        return ExitCode::from(2);
    }
    let (mut pass, mut fail, mut skip) = (0, 0, 0);
    for dir in &dirs {
        let dir = Path::new(dir);
        let label = dir
            .file_name()
            .map_or_else(|| "vm".into(), |n| n.to_string_lossy().into_owned());
        let verdict = RunVerdict::judge(
            &read(&dir.join("console.log")),
            &read(&dir.join("results.ktap")),
            dir.join("timed-out").exists(),
        );
        print!("{}", verdict.render(&label));
        let (p, f, s) = verdict.totals();
        pass += p;
        fail += f;
        skip += s;
    }
    println!("{pass} passed, {fail} failed, {skip} skipped");
    if fail == 0 {
        ExitCode::SUCCESS
    } else {
        ExitCode::FAILURE
    }
}
