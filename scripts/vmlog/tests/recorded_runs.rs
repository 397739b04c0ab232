//! The runner's verdicts on VM logs recorded from real runs of the debug
//! kernel (`scripts/record-fixtures.sh` records them again).

use kofi_vmlog::ktap::Outcome;
use kofi_vmlog::RunVerdict;
use std::path::{Path, PathBuf};
use std::process::Command;

fn fixture(name: &str) -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("tests/fixtures")
        .join(name)
}

fn judge(name: &str) -> RunVerdict {
    let dir = fixture(name);
    let read = |f: &str| String::from_utf8_lossy(&std::fs::read(dir.join(f)).unwrap()).into_owned();
    RunVerdict::judge(
        &read("console.log"),
        &read("results.ktap"),
        dir.join("timed-out").exists(),
    )
}

fn failed_paths(v: &RunVerdict) -> Vec<String> {
    v.verdicts
        .iter()
        .filter(|v| v.outcome == Outcome::Fail)
        .map(|v| v.path.clone())
        .collect()
}

#[test]
fn clean_run_passes() {
    let v = judge("pass");
    let (pass, fail, _) = v.totals();
    assert!(v.passed(), "{}", v.render("pass"));
    assert!(pass >= 10, "{pass} passed");
    assert_eq!(fail, 0);
    assert!(v.finished && !v.timed_out && v.splats.is_empty());
}

#[test]
fn failing_kunit_case_fails_the_run() {
    let v = judge("ktap_fail");
    assert!(!v.passed());
    assert!(v.splats.is_empty(), "a failed expectation is not a splat");
    let failed = failed_paths(&v);
    assert_eq!(
        failed,
        ["kofi_fixture_failing/kofi_fixture_failing/fails"],
        "{}",
        v.render("ktap_fail")
    );
    assert!(v.verdicts.iter().any(|v| v.outcome == Outcome::Pass));
}

#[test]
fn hung_guest_fails_the_run() {
    let v = judge("hung");
    assert!(v.timed_out && !v.finished);
    assert!(!v.passed());
    assert!(v.render("hung").contains("did not finish in time"));
}

#[test]
fn guest_warning_fails_the_run() {
    let v = judge("warning");
    assert!(v.finished, "the guest goes on after a WARN");
    assert!(failed_paths(&v).is_empty(), "the suites themselves passed");
    assert!(!v.passed());
    assert!(v
        .splats
        .iter()
        .any(|s| s.marker == "WARNING:" && s.line.contains("kofi_fault")));
}

#[test]
fn kmemleak_finding_fails_the_run() {
    let v = judge("leak");
    assert!(v.finished);
    assert!(!v.passed());
    assert!(v
        .splats
        .iter()
        .any(|s| s.marker == "unreferenced object 0x"));
}

#[test]
fn oops_fails_the_run() {
    let v = judge("oops");
    assert!(!v.finished, "PANIC_ON_OOPS ends the guest");
    assert!(!v.passed());
    assert!(v.splats.iter().any(|s| s.line.contains("kernel BUG")));
}

#[test]
fn command_line_exit_status_and_summary() {
    let run = |dirs: &[&str]| {
        Command::new(env!("CARGO_BIN_EXE_kofi-vmlog"))
            .args(dirs.iter().map(|d| fixture(d)))
            .output()
            .unwrap()
    };
    let ok = run(&["pass"]);
    let out = String::from_utf8_lossy(&ok.stdout);
    assert!(ok.status.success(), "{out}");
    let last = out.lines().last().unwrap();
    assert!(last.ends_with(" passed, 0 failed, 0 skipped"), "{last}");

    let bad = run(&["pass", "warning"]);
    assert_eq!(bad.status.code(), Some(1));
    let out = String::from_utf8_lossy(&bad.stdout);
    assert!(
        out.lines().last().unwrap().contains(" passed, 1 failed"),
        "{out}"
    );

    assert_eq!(run(&[]).status.code(), Some(2));
}
