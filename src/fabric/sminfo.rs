//! `sminfo`: queries (or sets) the SMInfo attribute of a subnet manager (infiniband-diags
//! 44): `sminfo [options] [sm_lid|sm_dr_path [modifier]]`, with `-s state`, `-p priority`
//! and `-a activity` for a Set (a nonzero modifier).

use std::ffi::OsString;
use std::fmt::Write as _;
use std::process::ExitCode;

use ibumad::mad::SmInfo;

use super::dest::{self, Dest};
use super::options::{self, Handled, Opt, Tool};
use crate::cli::{exit_code, prog_name, strtoull, Output};
use crate::ibdiag;

/// Name of each SMState value, as the C tool prints it.
const STATES: [&str; 4] = [
    "SMINFO_NOTACT",
    "SMINFO_DISCOVER",
    "SMINFO_STANDBY",
    "SMINFO_MASTER",
];

/// sminfo's own options.
const OPTS: [Opt; 3] = [
    Opt {
        name: "state",
        letter: 's',
        value: Some("<0-3>"),
        help: "SMState to set",
    },
    Opt {
        name: "priority",
        letter: 'p',
        value: Some("<0-15>"),
        help: "priority to set",
    },
    Opt {
        name: "activity",
        letter: 'a',
        value: Some("<val>"),
        help: "ActCount to set",
    },
];

/// `sminfo [options] [sm_lid|sm_dr_path [modifier]]`: prints the SM's LID, GUID, activity
/// count, priority and state.
pub fn sminfo(args: Vec<OsString>) -> ExitCode {
    let prog = prog_name(&args, "sminfo");
    let mut out = Output::new();
    let status = run(&prog, &args, &mut out);
    out.flush();
    exit_code(status)
}

fn run(prog: &str, args: &[OsString], out: &mut Output) -> i32 {
    // The values a Set sends (the C defaults: state STANDBY).
    let mut set = SmInfo {
        sm_state: 2,
        ..SmInfo::default()
    };
    let tool = Tool {
        exclude: "sK",
        opts: &OPTS,
        usage_args: "<sm_lid|sm_dr_path> [modifier]",
        examples: &[],
    };
    let parsed = options::parse(prog, args, &tool, out, |letter, value, _| {
        let value = strtoull(value.unwrap_or(""));
        match letter {
            's' => set.sm_state = value as u8,
            'p' => set.priority = value as u8,
            _ => set.act_count = value as u32,
        }
        Handled::Yes
    });
    let (common, operands) = match parsed {
        Ok(parsed) => parsed,
        Err(status) => return status,
    };
    let exit = |out: &mut Output, msg: &str| ibdiag::exit(out, prog, common.debug, "main", msg);
    let modifier = operands.get(1).map_or(0, |m| dest::atoi(m) as u32);
    let rpc = match options::open_rpc(prog, &common, out) {
        Ok(rpc) => rpc,
        Err(status) => return status,
    };
    let target = match operands.first() {
        // sminfo resolves a GUID with the local port's SM, whatever `-s` says.
        Some(text) => match dest::resolve(&rpc, common.dest, text, None, out) {
            Some(d) => d,
            None => return exit(out, &format!("can't resolve destination port {text}")),
        },
        None => match dest::local_port(&rpc) {
            Some(port) => Dest::Lid(port.sm_lid as u16),
            None => return exit(out, "can't resolve sm port (null)"),
        },
    };
    let answer = if modifier != 0 {
        let mut data = [0; 64];
        data[..SmInfo::SIZE].copy_from_slice(&set.encode());
        rpc.smp_set(&target, SmInfo::ATTR_ID, modifier, &data, out)
    } else {
        rpc.smp_get(&target, SmInfo::ATTR_ID, 0, out)
    };
    let Some(info) = answer.and_then(|data| SmInfo::decode(&data).ok()) else {
        return exit(out, "query");
    };
    let lid = match target {
        Dest::Lid(lid) => lid,
        Dest::Dr(_) => 0,
    };
    let state = STATES
        .get(usize::from(info.sm_state))
        .copied()
        .unwrap_or("???");
    let _ = writeln!(
        out,
        "sminfo: sm lid {lid} sm guid {:#x}, activity count {} priority {} state {} {state}",
        info.guid, info.act_count, info.priority, info.sm_state
    );
    0
}
