//! `sminfo`: queries the SMInfo attribute of the subnet manager (infiniband-diags 44).
//! Only the default query and an optional SM LID argument so far; no options.

use std::ffi::OsString;
use std::fmt::Write as _;
use std::process::ExitCode;
use std::time::Duration;

use ibumad::mad::{Route, SmInfo, Smp};
use ibumad::{Address, Port};

use crate::cli::{exit_code, prog_name, Output};

/// Name of each SMState value, as the C tool prints it.
const STATES: [&str; 4] = [
    "SMINFO_NOTACT",
    "SMINFO_DISCOVER",
    "SMINFO_STANDBY",
    "SMINFO_MASTER",
];

/// `sminfo [sm_lid]`: prints the SM's LID, GUID, activity count, priority and state.
pub fn sminfo(args: Vec<OsString>) -> ExitCode {
    let prog = prog_name(&args, "sminfo");
    let mut out = Output::new();
    let status = run(&prog, &args, &mut out);
    out.flush();
    exit_code(status)
}

fn run(prog: &str, args: &[OsString], out: &mut Output) -> i32 {
    let port = match Port::open(None, 0) {
        Ok(p) => p,
        Err(e) => {
            out.error(&format!(
                "{prog}: iberror: failed: Failed to open '(null)' port '0': {e}"
            ));
            return -1;
        }
    };
    let lid = match args.get(1).and_then(|a| a.to_str()) {
        Some(a) => crate::cli::strtol(a) as u16,
        None => match ibumad::Ca::get(None) {
            Ok(ca) => ca.ports.first().map_or(0, |p| p.sm_lid as u16),
            Err(_) => 0,
        },
    };
    let failed = |out: &mut Output| {
        out.error(&format!("{prog}: iberror: failed: query"));
        -1
    };
    let Ok(agent) = port.register(0x01, 1) else {
        return failed(out);
    };
    let Ok(req) = Smp::get(SmInfo::ATTR_ID, 0, Route::Lid).encode() else {
        return failed(out);
    };
    let answer = agent.request(&req, &Address::smi(lid), Duration::from_millis(1000), 3);
    let Some(info) = answer
        .ok()
        .and_then(|a| Smp::decode(&a).ok())
        .and_then(|s| SmInfo::decode(&s.data).ok())
    else {
        return failed(out);
    };
    let state = STATES.get(usize::from(info.sm_state)).unwrap_or(&"?");
    let _ = writeln!(
        out,
        "sminfo: sm lid {lid} sm guid {:#x}, activity count {} priority {} state {} {state}",
        info.guid, info.act_count, info.priority, info.sm_state
    );
    0
}
