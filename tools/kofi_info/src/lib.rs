// SPDX-License-Identifier: GPL-2.0

//! kofi_info: what `fi_info` is to libfabric, for kofi. It asks the kernel
//! over kofi's generic netlink family (include/kofi/kofi_netlink.h) which
//! providers are registered and which fi_info they offer, and prints them.

pub mod abi;
pub mod names;
pub mod nl;
pub mod show;

use nl::{put_attr, put_str, Error, Source};

pub const USAGE: &str = "\
Usage: kofi_info [OPTIONS]
Prints the fi_info that kofi's providers offer, as fi_info does for libfabric.

  -p, --provider=NAME     only the infos of provider NAME
  -e, -t, --ep_type=TYPE  only endpoints of TYPE (FI_EP_MSG, FI_EP_RDM)
  -c, --caps=CAPS         infos with the capabilities CAPS (FI_MSG|FI_RMA|...)
  -n, --node=NODE         the infos for NODE (an address or host, as fi_getinfo's node)
  -P, --port=PORT         the infos for service PORT (fi_getinfo's service)
  -l, --list              the registered providers and their versions
  -o, --objects           the providers with their module references and open objects
  -v, --verbose           every attribute of each info (with -l: as --objects)
      --record=FILE       also write the kernel's answers to FILE (for tests)
      --replay=FILE       read the answers from FILE instead of asking the kernel
  -h, --help              this text
      --version           kofi_info's version
";

/// What the command line asks.
#[derive(Debug, Default, PartialEq)]
pub struct Options {
    pub provider: Option<String>,
    pub ep_type: Option<u32>,
    pub caps: Option<u64>,
    pub node: Option<String>,
    pub port: Option<String>,
    pub list: bool,
    pub objects: bool,
    pub verbose: bool,
    pub record: Option<String>,
    pub replay: Option<String>,
    pub help: bool,
    pub version: bool,
}

/// Parses the arguments (without the program's name). `Err` is the message
/// for a usage error.
pub fn parse_args(args: &[String]) -> Result<Options, String> {
    let mut o = Options::default();
    let mut i = 0;
    while i < args.len() {
        let arg = &args[i];
        i += 1;
        // `--name=value`, `--name value`, `-x value` or `-xvalue`.
        let (key, inline) = match arg.strip_prefix("--") {
            Some(long) => match long.split_once('=') {
                Some((k, v)) => (format!("--{k}"), Some(v.to_string())),
                None => (arg.clone(), None),
            },
            None if arg.starts_with('-') && arg.len() > 2 => {
                (arg[..2].to_string(), Some(arg[2..].to_string()))
            }
            None => (arg.clone(), None),
        };
        let flag = |o: &mut Options, key: &str| -> bool {
            match key {
                "-l" | "--list" => o.list = true,
                "-o" | "--objects" => o.objects = true,
                "-v" | "--verbose" => o.verbose = true,
                "-h" | "--help" => o.help = true,
                "--version" => o.version = true,
                _ => return false,
            }
            true
        };
        if inline.is_none() && flag(&mut o, &key) {
            continue;
        }
        let takes_value = matches!(
            key.as_str(),
            "-p" | "--provider"
                | "-e"
                | "-t"
                | "--ep_type"
                | "-c"
                | "--caps"
                | "-n"
                | "--node"
                | "-P"
                | "--port"
                | "--record"
                | "--replay"
        );
        if !takes_value {
            return Err(format!("unknown option '{arg}'"));
        }
        let value = match inline {
            Some(v) => v,
            None => {
                i += 1;
                args.get(i - 1)
                    .cloned()
                    .ok_or_else(|| format!("option '{key}' needs a value"))?
            }
        };
        if value.is_empty() {
            return Err(format!("option '{key}' needs a value"));
        }
        match key.as_str() {
            "-p" | "--provider" => o.provider = Some(value),
            "-e" | "-t" | "--ep_type" => {
                let t = names::parse_name(names::EP_TYPES, "FI_EP_", &value).ok_or_else(|| {
                    format!("unknown endpoint type '{value}' (FI_EP_MSG, FI_EP_RDM)")
                })?;
                o.ep_type = Some(t as u32);
            }
            "-c" | "--caps" => o.caps = Some(names::parse_caps(&value)?),
            "-n" | "--node" => o.node = Some(value),
            "-P" | "--port" => o.port = Some(value),
            "--record" => o.record = Some(value),
            _ => o.replay = Some(value),
        }
    }
    if (o.list || o.objects) && (o.provider.is_some() || o.ep_type.is_some() || o.caps.is_some()) {
        return Err("-l and -o list every provider: they take no filter".into());
    }
    if o.record.is_some() && o.replay.is_some() {
        return Err("--record and --replay exclude each other".into());
    }
    Ok(o)
}

/// What a run printed and its exit status (0 done, 1 the kernel said no or
/// could not be asked, 2 a usage error).
#[derive(Debug, Default)]
pub struct Outcome {
    pub stdout: String,
    pub stderr: String,
    pub status: i32,
}

fn source(o: &Options) -> Result<Source, Error> {
    if let Some(path) = &o.replay {
        return Source::replay(&std::fs::read_to_string(path)?);
    }
    let record = match &o.record {
        Some(path) => Some(std::fs::File::create(path)?),
        None => None,
    };
    Source::kernel(record)
}

/// Runs kofi_info with `args` (without the program's name).
pub fn run(args: &[String]) -> Outcome {
    let o = match parse_args(args) {
        Ok(o) => o,
        Err(e) => {
            return Outcome {
                stderr: format!("kofi_info: {e}\nTry 'kofi_info --help'.\n"),
                status: 2,
                ..Outcome::default()
            }
        }
    };
    if o.help {
        return Outcome {
            stdout: USAGE.into(),
            ..Outcome::default()
        };
    }
    if o.version {
        let stdout = format!("kofi_info {}\n", env!("CARGO_PKG_VERSION"));
        return Outcome {
            stdout,
            ..Outcome::default()
        };
    }
    match query(&o) {
        Ok(stdout) => Outcome {
            stdout,
            ..Outcome::default()
        },
        Err(e) => Outcome {
            stderr: format!("kofi_info: {e}\n"),
            status: 1,
            ..Outcome::default()
        },
    }
}

fn query(o: &Options) -> Result<String, String> {
    let mut src = source(o).map_err(|e| e.to_string())?;
    if o.list || o.objects {
        let msgs = src
            .dump(abi::KOFI_CMD_GET_PROVIDERS, &[])
            .map_err(|e| e.to_string())?;
        return show::providers(&msgs, o.objects || o.verbose).map_err(|e| e.to_string());
    }
    let mut hints = Vec::new();
    if let Some(p) = &o.provider {
        put_str(&mut hints, abi::attr("KOFI_A_PROV_NAME"), p);
    }
    if let Some(t) = o.ep_type {
        put_attr(&mut hints, abi::attr("KOFI_A_EP_TYPE"), &t.to_ne_bytes());
    }
    if let Some(c) = o.caps {
        put_attr(&mut hints, abi::attr("KOFI_A_CAPS"), &c.to_ne_bytes());
    }
    if let Some(n) = &o.node {
        put_str(&mut hints, abi::attr("KOFI_A_NODE"), n);
    }
    if let Some(p) = &o.port {
        put_str(&mut hints, abi::attr("KOFI_A_SERVICE"), p);
    }
    match src.dump(abi::KOFI_CMD_GET_INFO, &hints) {
        Ok(msgs) => show::infos(&msgs, o.verbose).map_err(|e| e.to_string()),
        Err(Error::Kernel(e)) => {
            let mut msg = format!("fi_getinfo: {}", Error::Kernel(e));
            // Say why when the provider asked for is not there at all: ask
            // the same socket for the registered ones (a replay has no more).
            let registered = match (&o.provider, &src) {
                (Some(_), Source::Kernel { .. }) => src.dump(abi::KOFI_CMD_GET_PROVIDERS, &[]).ok(),
                _ => None,
            };
            if let (Some(p), Some(list)) = (&o.provider, registered) {
                let names: Vec<String> = list
                    .iter()
                    .filter_map(|m| m.get(&abi::attr("KOFI_A_PROV_NAME"))?.str())
                    .collect();
                if !names.iter().any(|n| n.eq_ignore_ascii_case(p)) {
                    let names = if names.is_empty() {
                        "none".into()
                    } else {
                        names.join(", ")
                    };
                    msg = format!("{msg}: no provider '{p}' is registered (registered: {names})");
                }
            }
            Err(msg)
        }
        Err(e) => Err(e.to_string()),
    }
}
