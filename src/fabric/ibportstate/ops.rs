//! The operation words of `ibportstate` after `<dest> <portnum>`: one state operation
//! (`query`, `enable`, `disable`, `reset`, `down`, `arm`, `active`, `on`, `off`) and any
//! number of `<field> <value>` settings, checked as the C tool checks them.

use crate::cli::strtoull;
use crate::fabric::options::parse_u64_exact;

/// The state operation.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub enum StateOp {
    /// Print the port (and, for an active switch port, its peer).
    #[default]
    Query,
    /// PortPhysicalState Polling.
    Enable,
    /// PortPhysicalState Polling.
    Reset,
    /// PortPhysicalState Disabled.
    Disable,
    /// PortState Down.
    Down,
    /// PortState Armed.
    Arm,
    /// PortState Active.
    Active,
    /// Enable, only if Disabled.
    On,
    /// Disable.
    Off,
}

/// A setting word and its value.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Setting {
    /// LinkSpeedEnabled.
    Speed,
    /// LinkSpeedExtEnabled.
    Espeed,
    /// Mellanox FDR10 enable (ExtendedPortInfo).
    Fdr10,
    /// LinkWidthEnabled.
    Width,
    /// OperationalVLs.
    Vls,
    /// NeighborMTU.
    Mtu,
    /// LID.
    Lid,
    /// MasterSMLID.
    Smlid,
    /// LMC.
    Lmc,
    /// M_Key.
    Mkey,
    /// M_KeyLeasePeriod.
    Mkeylease,
    /// M_KeyProtectBits.
    Mkeyprot,
}

/// The words, in the C table's order.
const WORDS: [(&str, Word); 21] = [
    ("query", Word::Op(StateOp::Query)),
    ("enable", Word::Op(StateOp::Enable)),
    ("reset", Word::Op(StateOp::Reset)),
    ("disable", Word::Op(StateOp::Disable)),
    ("speed", Word::Set(Setting::Speed)),
    ("espeed", Word::Set(Setting::Espeed)),
    ("fdr10", Word::Set(Setting::Fdr10)),
    ("width", Word::Set(Setting::Width)),
    ("down", Word::Op(StateOp::Down)),
    ("arm", Word::Op(StateOp::Arm)),
    ("active", Word::Op(StateOp::Active)),
    ("vls", Word::Set(Setting::Vls)),
    ("mtu", Word::Set(Setting::Mtu)),
    ("lid", Word::Set(Setting::Lid)),
    ("smlid", Word::Set(Setting::Smlid)),
    ("lmc", Word::Set(Setting::Lmc)),
    ("mkey", Word::Set(Setting::Mkey)),
    ("mkeylease", Word::Set(Setting::Mkeylease)),
    ("mkeyprot", Word::Set(Setting::Mkeyprot)),
    ("on", Word::Op(StateOp::On)),
    ("off", Word::Op(StateOp::Off)),
];

#[derive(Clone, Copy, Debug)]
enum Word {
    Op(StateOp),
    Set(Setting),
}

/// What the words ask.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct Ops {
    /// The state operation, if one was named.
    pub op: Option<StateOp>,
    /// The settings, last value of each kept, in the order first given.
    pub settings: Vec<(Setting, u64)>,
}

impl Ops {
    /// The value of `setting`, if given.
    pub fn get(&self, setting: Setting) -> Option<u64> {
        self.settings
            .iter()
            .find(|(s, _)| *s == setting)
            .map(|&(_, v)| v)
    }

    /// Whether anything is to be changed (a state operation other than `query`, or a
    /// setting).
    pub fn changes(&self) -> bool {
        !self.settings.is_empty() || self.op.is_some_and(|op| op != StateOp::Query)
    }
}

/// Parses the words after `<dest> <portnum>`; `Err` is the C tool's `IBEXIT` message.
/// `ask_key` asks for the new M_Key when `mkey`'s value is not a number (`getpass`; `None`
/// when it cannot).
pub fn parse(words: &[String], ask_key: &mut dyn FnMut() -> Option<String>) -> Result<Ops, String> {
    let mut ops = Ops::default();
    let mut i = 0;
    while i < words.len() {
        let word = &words[i];
        let Some(&(name, kind)) = WORDS.iter().find(|(name, _)| name == word) else {
            return Err(format!("invalid operation: {word}"));
        };
        match kind {
            Word::Op(op) => {
                if ops.op.is_some() {
                    return Err(format!(
                        "{name} only one of: query, enable, disable, reset, down, arm, \
                         active, can be specified"
                    ));
                }
                ops.op = Some(op);
            }
            Word::Set(setting) => {
                i += 1;
                let Some(text) = words.get(i) else {
                    return Err(format!("{name} requires an additional parameter"));
                };
                let value = check(setting, text, ask_key)?;
                match ops.settings.iter_mut().find(|(s, _)| *s == setting) {
                    Some(entry) => entry.1 = value,
                    None => ops.settings.push((setting, value)),
                }
            }
        }
        i += 1;
    }
    Ok(ops)
}

/// The value of `setting` (`strtoull`), or the C tool's message for one out of range.
fn check(
    setting: Setting,
    text: &str,
    ask_key: &mut dyn FnMut() -> Option<String>,
) -> Result<u64, String> {
    if setting == Setting::Mkey {
        let key =
            parse_u64_exact(text).or_else(|| ask_key().and_then(|line| parse_u64_exact(&line)));
        return key.ok_or_else(|| "Bad new M_Key\n".to_owned());
    }
    let v = strtoull(text);
    let bad = match setting {
        Setting::Speed => (v > 15).then(|| format!("invalid speed value {v}")),
        Setting::Espeed => (v > 31).then(|| format!("invalid extended speed value {v}")),
        Setting::Fdr10 => (v > 1).then(|| format!("invalid fdr10 speed value {v}")),
        Setting::Width => (v > 31 && v != 255).then(|| format!("invalid width value {v}")),
        Setting::Vls => (v == 0 || v > 5).then(|| format!("invalid vls value {v}")),
        Setting::Mtu => (v == 0 || v > 5).then(|| format!("invalid mtu value {v}")),
        Setting::Lid => (v == 0 || v >= 0xc000).then(|| format!("invalid lid value 0x{v:x}")),
        Setting::Smlid => (v == 0 || v >= 0xc000).then(|| format!("invalid smlid value 0x{v:x}")),
        Setting::Lmc => (v > 7).then(|| format!("invalid lmc value {v}")),
        Setting::Mkey => parse_u64_exact(text)
            .is_none()
            .then(|| "Bad new M_Key\n".to_owned()),
        Setting::Mkeylease => (v > 0xffff).then(|| format!("invalid mkey lease time {v}")),
        Setting::Mkeyprot => (v > 3).then(|| format!("invalid mkey protection bit setting {v}")),
    };
    match bad {
        Some(msg) => Err(msg),
        None => Ok(v),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn words(text: &str) -> Vec<String> {
        text.split_whitespace().map(str::to_owned).collect()
    }

    fn parse(words: &[String]) -> Result<Ops, String> {
        super::parse(words, &mut || None)
    }

    #[test]
    fn operations_and_settings() {
        let ops = parse(&words("speed 1 disable width 2 speed 4")).unwrap();
        assert_eq!(ops.op, Some(StateOp::Disable));
        assert_eq!(ops.get(Setting::Speed), Some(4));
        assert_eq!(ops.get(Setting::Width), Some(2));
        assert!(ops.changes());
        assert!(!parse(&words("query")).unwrap().changes());
        assert!(!parse(&[]).unwrap().changes());
    }

    #[test]
    fn errors_as_the_c_tool_words_them() {
        let err = |text| parse(&words(text)).unwrap_err();
        assert_eq!(err("speed"), "speed requires an additional parameter");
        assert_eq!(err("speed 16"), "invalid speed value 16");
        assert_eq!(err("lid 0xc000"), "invalid lid value 0xc000");
        assert_eq!(err("bogus"), "invalid operation: bogus");
        assert!(err("enable disable").starts_with("disable only one of"));
        assert_eq!(
            parse(&words("width 255")).unwrap().get(Setting::Width),
            Some(255)
        );
        assert_eq!(err("mkey 12z"), "Bad new M_Key\n");
        let typed = super::parse(&words("mkey x"), &mut || Some("0x10".to_owned()));
        assert_eq!(typed.unwrap().get(Setting::Mkey), Some(16));
    }
}
