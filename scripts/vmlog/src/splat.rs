//! Kernel splats in a serial console log.

/// Markers of a kernel report that fails a run. Each is matched as a
/// substring of a console line.
pub const MARKERS: &[&str] = &[
    "BUG:",
    "kernel BUG at",
    "WARNING:",
    "KASAN:",
    "UBSAN:",
    "Oops",
    "Call Trace:",
    "Kernel panic",
    "general protection fault",
    // lockdep
    "possible circular locking dependency",
    "possible recursive locking detected",
    "inconsistent lock state",
    "possible irq lock inversion",
    "suspicious RCU usage",
    "lock held when returning to user space",
    "INFO: trying to register non-static key",
    // debugobjects, list debugging, RCU and hung tasks
    "ODEBUG:",
    "list_add corruption",
    "list_del corruption",
    "self-detected stall",
    "detected stalls on CPUs",
    "blocked for more than",
    // kmemleak
    "unreferenced object 0x",
    "suspected memory leaks",
    // a provider's connections alive when its module unloads, which
    // kmemleak misses when they hold each other (providers/common/census.rs)
    "kofi-leak:",
];

/// A console line carrying one of the markers.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Splat {
    pub line_no: usize,
    pub marker: &'static str,
    pub line: String,
}

/// Every line of `console` with a splat marker, in order.
pub fn find_splats(console: &str) -> Vec<Splat> {
    console
        .lines()
        .enumerate()
        .filter_map(|(i, line)| {
            MARKERS.iter().find(|m| line.contains(*m)).map(|m| Splat {
                line_no: i + 1,
                marker: m,
                line: line.trim_end().to_string(),
            })
        })
        .collect()
}

/// The line the guest's init prints to the console before running anything
/// (scripts/vm-run.sh); no kofi module can load before it.
pub const GUEST_START: &str = "kofi-guest: running";

/// The first splat logged before the guest started: a failed boot of the
/// kernel itself rather than a result (None when the boot was clean).
pub fn boot_splat(console: &str) -> Option<Splat> {
    let end = console
        .match_indices(GUEST_START)
        .find(|(i, _)| *i == 0 || console.as_bytes()[i - 1] == b'\n')
        .map_or(console.len(), |(i, _)| i);
    find_splats(&console[..end]).into_iter().next()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn boot_splat_only_counts_lines_before_the_guest_starts() {
        let early = "[ 0.1] BUG: KASAN: wild-memory-access in do_raw_spin_lock\n\
                     kofi-guest: running /kofi/tests/run_tests.sh\n";
        assert_eq!(boot_splat(early).map(|s| s.line_no), Some(1));
        let late = "[ 0.1] Linux version 6.12\n\
                    kofi-guest: running /kofi/tests/run_tests.sh\n\
                    [ 5.0] WARNING: CPU: 0 PID: 1 at kofi_foo\n";
        assert_eq!(boot_splat(late), None);
        // A guest that never started: every splat is a boot splat.
        assert!(boot_splat("[ 0.1] Kernel panic - not syncing\n").is_some());
    }

    #[test]
    fn clean_log_has_none() {
        assert!(find_splats("[    0.1] Linux version 6.12\n[    1.0] kofi: loaded\n").is_empty());
    }

    #[test]
    fn finds_kasan_and_lockdep() {
        let log = "a\n[ 2.0] BUG: KASAN: slab-out-of-bounds in f+0x1\nb\n[ 3.0] WARNING: possible circular locking dependency detected\n";
        let s = find_splats(log);
        assert_eq!(s.len(), 2);
        assert_eq!(s[0].line_no, 2);
        assert_eq!(s[0].marker, "BUG:");
    }

    #[test]
    fn finds_a_provider_census_leak() {
        let log = "[ 9.0] kofi_verbs: kofi-leak: 1 connection(s) alive at unload\n";
        let s = find_splats(log);
        assert_eq!(s.len(), 1);
        assert_eq!(s[0].marker, "kofi-leak:");
    }
}
