//! A KTAP (v1) parser: nested subtests by indentation, plans, SKIP/TODO.
//!
//! Test results are counted on the leaves. A parent that reports `not ok`
//! although none of its children failed (a suite whose init failed, say)
//! counts as one failure, and so does a plan whose promised results never came
//! (a test that crashed mid-suite).

/// The outcome of one test line.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Outcome {
    /// `ok`.
    Pass,
    /// `not ok`.
    Fail,
    /// `ok ... # SKIP` (or `not ok ... # SKIP`, which KTAP also treats as skipped).
    Skip,
}

/// A test result with its subtests.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct TestNode {
    pub name: String,
    pub outcome: Outcome,
    pub children: Vec<TestNode>,
}

/// A failure that is not a `not ok` line of its own.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Problem {
    /// Path of the (sub)test the problem belongs to, `/`-separated.
    pub path: String,
    pub what: String,
}

/// A parsed KTAP stream.
#[derive(Debug, Default, Clone, PartialEq, Eq)]
pub struct Report {
    pub tests: Vec<TestNode>,
    pub problems: Vec<Problem>,
}

/// One leaf (or problem) with its verdict, as printed in a summary.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Verdict {
    pub path: String,
    pub outcome: Outcome,
    pub note: String,
}

#[derive(Default)]
struct Level {
    plan: Option<usize>,
    results: Vec<TestNode>,
}

enum Line<'a> {
    Version,
    Plan(usize),
    Result {
        ok: bool,
        name: &'a str,
        directive: Option<&'a str>,
    },
    Other,
}

fn classify(text: &str) -> Line<'_> {
    if text.starts_with("KTAP version") || text.starts_with("TAP version") {
        return Line::Version;
    }
    if let Some(n) = text.strip_prefix("1..") {
        if let Ok(n) = n.trim().parse() {
            return Line::Plan(n);
        }
    }
    let (ok, rest) = if let Some(r) = text.strip_prefix("not ok ") {
        (false, r)
    } else if let Some(r) = text.strip_prefix("ok ") {
        (true, r)
    } else {
        return Line::Other;
    };
    // "<number> [- ]<description>[ # <directive>]"
    let rest = rest.trim_start();
    let digits = rest.bytes().take_while(u8::is_ascii_digit).count();
    if digits == 0 {
        return Line::Other;
    }
    let rest = rest[digits..].trim_start();
    let rest = rest.strip_prefix("- ").unwrap_or(rest);
    let (name, directive) = match rest.find(" # ") {
        Some(i) => (&rest[..i], Some(rest[i + 3..].trim())),
        None => match rest.strip_prefix("# ") {
            Some(d) => ("", Some(d.trim())),
            None => (rest, None),
        },
    };
    Line::Result {
        ok,
        name: name.trim(),
        directive,
    }
}

fn indent_of(line: &str) -> usize {
    line.chars()
        .take_while(|c| *c == ' ' || *c == '\t')
        .map(|c| if c == '\t' { 8 } else { 1 })
        .sum()
}

fn check_plan(level: &Level, path: &str, problems: &mut Vec<Problem>) {
    if let Some(plan) = level.plan {
        if level.results.len() < plan {
            problems.push(Problem {
                path: path.to_string(),
                what: format!(
                    "planned {plan} results, got {} (crashed or hung?)",
                    level.results.len()
                ),
            });
        }
    }
}

impl Report {
    /// Parses KTAP text. Lines that are not KTAP (diagnostics, noise) are ignored.
    pub fn parse(text: &str) -> Report {
        // Open levels, keyed by indentation, shallowest first.
        let mut levels: Vec<(usize, Level)> = Vec::new();
        let mut problems = Vec::new();

        for raw in text.lines() {
            let raw = raw.trim_end_matches('\r');
            let indent = indent_of(raw);
            match classify(raw.trim_start()) {
                Line::Other => {}
                Line::Version => {
                    // A new document at a level that already has results is a
                    // sibling stream (several suites one after another): keep going.
                    if !levels.iter().any(|(i, _)| *i == indent) {
                        levels.push((indent, Level::default()));
                        levels.sort_by_key(|(i, _)| *i);
                    }
                }
                Line::Plan(n) => match levels.iter_mut().find(|(i, _)| *i == indent) {
                    Some((_, level)) => level.plan = Some(n),
                    None => {
                        levels.push((
                            indent,
                            Level {
                                plan: Some(n),
                                ..Level::default()
                            },
                        ));
                        levels.sort_by_key(|(i, _)| *i);
                    }
                },
                Line::Result {
                    ok,
                    name,
                    directive,
                } => {
                    // Everything deeper is this result's subtests.
                    let mut children = Vec::new();
                    while levels.last().is_some_and(|(i, _)| *i > indent) {
                        let (_, level) = levels.pop().unwrap();
                        check_plan(&level, name, &mut problems);
                        let mut results = level.results;
                        results.append(&mut children);
                        children = results;
                    }
                    let skip = directive.is_some_and(|d| {
                        let d = d.to_ascii_uppercase();
                        d.starts_with("SKIP") || d.starts_with("TODO")
                    });
                    let outcome = match (skip, ok) {
                        (true, _) => Outcome::Skip,
                        (false, true) => Outcome::Pass,
                        (false, false) => Outcome::Fail,
                    };
                    let node = TestNode {
                        name: name.to_string(),
                        outcome,
                        children,
                    };
                    match levels.iter_mut().find(|(i, _)| *i == indent) {
                        Some((_, level)) => level.results.push(node),
                        None => levels.push((
                            indent,
                            Level {
                                plan: None,
                                results: vec![node],
                            },
                        )),
                    }
                }
            }
        }

        // Deeper levels still open when the stream ended belong to a parent
        // whose result line never came: the guest died inside them.
        let mut orphans = Vec::new();
        while levels.len() > 1 {
            let (_, level) = levels.pop().unwrap();
            check_plan(&level, "(unfinished)", &mut problems);
            let mut results = level.results;
            results.append(&mut orphans);
            orphans = results;
        }
        let mut tests = Vec::new();
        if let Some((_, top)) = levels.pop() {
            check_plan(&top, "(top level)", &mut problems);
            tests = top.results;
        }
        if !orphans.is_empty() {
            problems.push(Problem {
                path: "(unfinished)".to_string(),
                what: "subtests without a closing result line".to_string(),
            });
            tests.push(TestNode {
                name: "(unfinished)".to_string(),
                outcome: Outcome::Fail,
                children: orphans,
            });
        }
        Report { tests, problems }
    }

    /// Leaf verdicts, parents that failed on their own, then the problems.
    pub fn verdicts(&self) -> Vec<Verdict> {
        fn walk(node: &TestNode, prefix: &str, out: &mut Vec<Verdict>) {
            let path = if prefix.is_empty() {
                node.name.clone()
            } else {
                format!("{prefix}/{}", node.name)
            };
            if node.children.is_empty() {
                out.push(Verdict {
                    path,
                    outcome: node.outcome,
                    note: String::new(),
                });
                return;
            }
            let before = out.len();
            for child in &node.children {
                walk(child, &path, out);
            }
            let child_failed = out[before..].iter().any(|v| v.outcome == Outcome::Fail);
            if node.outcome == Outcome::Fail && !child_failed {
                out.push(Verdict {
                    path,
                    outcome: Outcome::Fail,
                    note: "failed itself (all its subtests passed or skipped)".to_string(),
                });
            }
        }
        let mut out = Vec::new();
        for test in &self.tests {
            walk(test, "", &mut out);
        }
        for p in &self.problems {
            out.push(Verdict {
                path: p.path.clone(),
                outcome: Outcome::Fail,
                note: p.what.clone(),
            });
        }
        out
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn count(report: &Report) -> (usize, usize, usize) {
        let v = report.verdicts();
        let n = |o| v.iter().filter(|x| x.outcome == o).count();
        (n(Outcome::Pass), n(Outcome::Fail), n(Outcome::Skip))
    }

    #[test]
    fn flat_results_and_directives() {
        let r = Report::parse(
            "KTAP version 1\n1..4\nok 1 a\nnot ok 2 - b\nok 3 c # SKIP no device\nok 4 d # TODO later\n",
        );
        assert_eq!(count(&r), (1, 1, 2));
        assert_eq!(r.tests[1].name, "b");
        assert!(r.problems.is_empty());
    }

    #[test]
    fn nested_subtests_count_leaves() {
        let text = "KTAP version 1\n1..2\n    KTAP version 1\n    # Subtest: s1\n    1..2\n    ok 1 x\n    not ok 2 y\nnot ok 1 s1\n    KTAP version 1\n    1..1\n    ok 1 z\nok 2 s2\n";
        let r = Report::parse(text);
        assert_eq!(r.tests.len(), 2);
        assert_eq!(r.tests[0].children.len(), 2);
        assert_eq!(count(&r), (2, 1, 0));
        let paths: Vec<_> = r.verdicts().into_iter().map(|v| v.path).collect();
        assert_eq!(paths, ["s1/x", "s1/y", "s2/z"]);
    }

    #[test]
    fn parent_failing_alone_counts_once() {
        let r = Report::parse("KTAP version 1\n1..1\n    1..1\n    ok 1 x\nnot ok 1 suite\n");
        assert_eq!(count(&r), (1, 1, 0));
    }

    #[test]
    fn short_plan_is_a_failure() {
        let r = Report::parse("KTAP version 1\n1..3\nok 1 a\nok 2 b\n");
        assert_eq!(count(&r), (2, 1, 0));
        assert!(r.problems[0].what.contains("planned 3"));
    }

    #[test]
    fn stream_cut_inside_a_subtest() {
        let r = Report::parse("KTAP version 1\n1..1\n    KTAP version 1\n    1..3\n    ok 1 x\n");
        let (pass, fail, _) = count(&r);
        assert_eq!(pass, 1);
        assert!(fail >= 2, "short plan and unfinished parent: {fail}");
    }

    #[test]
    fn sibling_documents_and_noise() {
        let text = "noise\nKTAP version 1\n1..1\nok 1 a\n[   1.0] printk line\nKTAP version 1\n1..1\nnot ok 1 b\n";
        let r = Report::parse(text);
        assert_eq!(r.tests.len(), 2);
        assert_eq!(count(&r), (1, 1, 0));
    }

    #[test]
    fn empty_stream_has_no_tests() {
        assert!(Report::parse("").tests.is_empty());
    }
}
