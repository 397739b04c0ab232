// SPDX-License-Identifier: GPL-2.0

//! kofi_info against answers recorded from the debug kernel
//! (`scripts/record-fixtures.sh kofi_info`): each case replayed prints what
//! the tool printed live in the guest, and says what the case is about.

use std::path::PathBuf;

struct Case {
    out: String,
    status: i32,
    live: String,
}

fn fixtures() -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("tests/fixtures")
}

/// Replays case `name` with the arguments it was recorded with.
fn replay(name: &str) -> Case {
    let dir = fixtures();
    let read = |ext: &str| {
        std::fs::read_to_string(dir.join(format!("{name}.{ext}")))
            .unwrap_or_else(|e| panic!("fixture {name}.{ext}: {e}"))
    };
    let mut args: Vec<String> = read("args").split_whitespace().map(String::from).collect();
    args.push(format!(
        "--replay={}",
        dir.join(format!("{name}.rec")).display()
    ));
    let o = kofi_info::run(&args);
    assert_eq!(
        o.status.to_string(),
        read("status").trim(),
        "{name}: exit status"
    );
    Case {
        out: o.stdout + &o.stderr,
        status: o.status,
        live: read("out"),
    }
}

/// Every recorded case prints from its recording what it printed live.
#[test]
fn replayed_answers_print_as_live() {
    let mut n = 0;
    for entry in std::fs::read_dir(fixtures()).unwrap() {
        let path = entry.unwrap().path();
        if path.extension().is_some_and(|e| e == "rec") {
            let name = path.file_stem().unwrap().to_str().unwrap().to_string();
            let c = replay(&name);
            if c.status == 0 {
                assert_eq!(c.out, c.live, "{name}");
            } else {
                // Live, an error also names the registered providers.
                assert!(
                    c.live.starts_with(c.out.trim_end()),
                    "{name}: {} / {}",
                    c.out,
                    c.live
                );
            }
            n += 1;
        }
    }
    assert!(n >= 7, "only {n} recorded cases");
}

#[test]
fn objects_of_a_listening_consumer() {
    let c = replay("objects");
    assert!(c.out.contains("sock:\n"), "{}", c.out);
    assert!(c.out.contains("        FI_CLASS_PEP: 1\n"), "{}", c.out);
    assert!(c.out.contains("        FI_CLASS_FABRIC: "), "{}", c.out);
    assert!(c.out.contains("verbs:\n"), "{}", c.out);
}

#[test]
fn infos_of_both_providers_and_types() {
    let c = replay("infos");
    for want in [
        "provider: sock\n",
        "provider: verbs\n",
        "    type: FI_EP_MSG\n",
        "    type: FI_EP_RDM\n",
        "    protocol: FI_PROTO_SOCK_TCP\n",
        "    protocol: FI_PROTO_IWARP\n",
        "    domain: siw0\n",
    ] {
        assert!(c.out.contains(want), "no {want:?} in {}", c.out);
    }
    let v = replay("infos_verbose");
    assert_eq!(
        v.out.matches("---\n").count(),
        c.out.matches("provider: ").count()
    );
}

#[test]
fn tagged_infos_of_both_endpoint_types() {
    let c = replay("tagged");
    assert!(c.out.contains("type: FI_EP_RDM\n"));
    assert!(c.out.contains("type: FI_EP_MSG\n"));
    assert!(c.out.contains("FI_TAGGED"));
}

#[test]
fn node_and_port_become_the_destination() {
    let c = replay("node");
    assert!(
        c.out
            .contains("dest_addr: fi_sockaddr_in://10.0.2.10:7471\n"),
        "{}",
        c.out
    );
}

#[test]
fn nothing_found_is_enodata() {
    let c = replay("nosuch");
    assert_eq!(c.status, 1);
    assert!(c.out.contains("fi_getinfo: -61"), "{}", c.out);
}

#[test]
fn usage_errors_exit_2() {
    for args in [
        &["-e", "FI_EP_STREAM"][..],
        &["-c", "FI_MSG|"],
        &["-x"],
        &["-p"],
        &["-l", "-p", "sock"],
    ] {
        let args: Vec<String> = args.iter().map(|s| s.to_string()).collect();
        let o = kofi_info::run(&args);
        assert_eq!(o.status, 2, "{args:?}");
        assert!(
            o.stderr.starts_with("kofi_info: "),
            "{args:?}: {}",
            o.stderr
        );
        assert!(o.stdout.is_empty());
    }
    let o = kofi_info::run(&["--help".to_string()]);
    assert_eq!(o.status, 0);
    assert!(o.stdout.contains("--provider"));
}
