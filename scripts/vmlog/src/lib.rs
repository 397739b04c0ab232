//! Judges a kofi VM run from what the guest left behind: the console log
//! (kernel messages, on the first serial port) and the results channel (KTAP
//! written by the guest's test script on the second serial port, so that
//! printk output never interleaves with it).

pub mod ktap;
pub mod splat;

use ktap::{Outcome, Report, Verdict};
use splat::Splat;

/// The last line the guest writes on its results channel once its script,
/// the kmemleak scans included, has finished.
pub const DONE_MARKER: &str = "KOFI-GUEST-DONE";

/// The verdict on one VM run.
#[derive(Debug)]
pub struct RunVerdict {
    pub verdicts: Vec<Verdict>,
    pub splats: Vec<Splat>,
    pub finished: bool,
    pub timed_out: bool,
}

impl RunVerdict {
    /// Judges a run from its console log and results channel. `timed_out` is
    /// what the runner saw: the guest had to be killed.
    pub fn judge(console: &str, results: &str, timed_out: bool) -> RunVerdict {
        let report = Report::parse(results);
        RunVerdict {
            verdicts: report.verdicts(),
            splats: splat::find_splats(console),
            finished: results.lines().any(|l| l.trim() == DONE_MARKER),
            timed_out,
        }
    }

    fn count(&self, outcome: Outcome) -> usize {
        self.verdicts
            .iter()
            .filter(|v| v.outcome == outcome)
            .count()
    }

    /// Passed, failed and skipped test cases. A splat, an unfinished or
    /// timed-out guest, or a run with no results at all count as one failure
    /// each, so the summary line never reads "0 failed" for a bad run.
    pub fn totals(&self) -> (usize, usize, usize) {
        let mut failed = self.count(Outcome::Fail);
        failed += usize::from(!self.splats.is_empty());
        failed += usize::from(!self.finished || self.timed_out);
        failed += usize::from(self.verdicts.is_empty());
        (self.count(Outcome::Pass), failed, self.count(Outcome::Skip))
    }

    pub fn passed(&self) -> bool {
        self.totals().1 == 0
    }

    /// A human-readable report: one line per test case, then what went wrong
    /// outside the tests.
    pub fn render(&self, label: &str) -> String {
        let mut out = String::new();
        for v in &self.verdicts {
            let tag = match v.outcome {
                Outcome::Pass => "ok  ",
                Outcome::Fail => "FAIL",
                Outcome::Skip => "skip",
            };
            let note = if v.note.is_empty() {
                String::new()
            } else {
                format!(" ({})", v.note)
            };
            out.push_str(&format!("{label}: {tag} {}{note}\n", v.path));
        }
        if self.verdicts.is_empty() {
            out.push_str(&format!("{label}: FAIL no KTAP results from the guest\n"));
        }
        if self.timed_out {
            out.push_str(&format!(
                "{label}: FAIL the guest did not finish in time and was killed\n"
            ));
        } else if !self.finished {
            out.push_str(&format!(
                "{label}: FAIL the guest stopped before its script finished (panic or crash?)\n"
            ));
        }
        if !self.splats.is_empty() {
            out.push_str(&format!(
                "{label}: FAIL kernel splat ({} line(s)):\n",
                self.splats.len()
            ));
            for s in self.splats.iter().take(20) {
                out.push_str(&format!("    console:{}: {}\n", s.line_no, s.line));
            }
        }
        out
    }
}
