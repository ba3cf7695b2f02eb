//! The two attributes `perfquery` prints with their own layout: PortExtendedSpeedsCounters
//! (`-T`) and PortSamplesControl (`-c`), as libibmad's `mad_dump_port_ext_speeds_counters`
//! and `mad_dump_portsamples_control` print them.

use ibumad::mad::{PortExtendedSpeedsCounters, PortSamplesControl};

use crate::fabric::dump::hex;
use crate::fabric::portinfo_text::field;

/// One `Name:....value` line.
fn line(text: &mut String, name: &str, value: &str) {
    *text += &field(name, value);
    text.push('\n');
}

/// The lines of PortExtendedSpeedsCounters (RS-FEC not active); `None` if `data` is short.
pub fn ext_speeds(data: &[u8]) -> Option<String> {
    let c = PortExtendedSpeedsCounters::decode(data).ok()?;
    let mut text = String::new();
    line(&mut text, "PortSelect", &c.port_select.to_string());
    line(&mut text, "CounterSelect", &hex(c.counter_select, 8));
    let sync = c.sync_header_error_counter.to_string();
    line(&mut text, "SyncHeaderErrorCounter", &sync);
    let unknown = c.unknown_block_counter.to_string();
    line(&mut text, "UnknownBlockCounter", &unknown);
    for (i, v) in c.error_detection.iter().enumerate() {
        line(
            &mut text,
            &format!("ErrorDetectionCounterLane{i}"),
            &v.to_string(),
        );
    }
    for (i, v) in c.fec_correctable.iter().enumerate() {
        line(
            &mut text,
            &format!("FECCorrectableBlockCtrLane{i}"),
            &v.to_string(),
        );
    }
    for (i, v) in c.fec_uncorrectable.iter().enumerate() {
        line(
            &mut text,
            &format!("FECUncorrectableBlockCtrLane{i}"),
            &v.to_string(),
        );
    }
    Some(text)
}

/// The lines of PortSamplesControl; `None` if `data` is short.
pub fn samples_control(data: &[u8]) -> Option<String> {
    let s = PortSamplesControl::decode(data).ok()?;
    let mut text = String::new();
    line(&mut text, "OpCode", &hex(s.op_code.into(), 1));
    line(&mut text, "PortSelect", &s.port_select.to_string());
    line(&mut text, "Tick", &hex(s.tick.into(), 1));
    line(&mut text, "CounterWidth", &s.counter_width.to_string());
    line(&mut text, "CounterMask0", &hex(s.counter_mask0.into(), 1));
    line(
        &mut text,
        "CounterMasks1to9",
        &hex(s.counter_masks1to9.into(), 4),
    );
    line(
        &mut text,
        "CounterMasks10to14",
        &hex(s.counter_masks10to14.into(), 2),
    );
    line(
        &mut text,
        "SampleMechanisms",
        &s.sample_mechanisms.to_string(),
    );
    line(&mut text, "SampleStatus", &s.sample_status.to_string());
    line(&mut text, "OptionMask", &hex(s.option_mask, 8));
    line(&mut text, "VendorMask", &hex(s.vendor_mask, 8));
    line(&mut text, "SampleStart", &s.sample_start.to_string());
    line(&mut text, "SampleInterval", &s.sample_interval.to_string());
    line(&mut text, "Tag", &hex(s.tag.into(), 2));
    for (i, v) in s.counter_select.iter().enumerate() {
        line(
            &mut text,
            &format!("CounterSelect{i}"),
            &hex((*v).into(), 2),
        );
    }
    let only = hex(s.samples_only_option_mask, 8);
    line(&mut text, "SamplesOnlyOptionMask", &only);
    Some(text)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn lines_as_libibmad_prints_them() {
        let mut data = [0u8; 192];
        data[..4].copy_from_slice(&[1, 2, 0x20, 0x05]);
        data[38..40].copy_from_slice(&[0x12, 0x34]);
        let text = samples_control(&data).unwrap();
        assert_eq!(text.lines().count(), 30);
        assert!(text.starts_with(
            "OpCode:..........................0x01\n\
             PortSelect:......................2\n\
             Tick:............................0x20\n\
             CounterWidth:....................5\n\
             CounterMask0:....................0x00\n\
             CounterMasks1to9:................0x00000000\n\
             CounterMasks10to14:..............0x0000\n"
        ));
        assert!(text.contains("\nOptionMask:......................0x0000000000000000\n"));
        assert!(text.contains("\nCounterSelect0:..................0x1234\n"));
        data[8..16].copy_from_slice(&u64::MAX.to_be_bytes());
        let text = ext_speeds(&data).unwrap();
        assert_eq!(text.lines().count(), 40);
        assert!(text.contains("\nCounterSelect:...................0xffffffffffffffff\n"));
        assert!(text.ends_with("\nFECUncorrectableBlockCtrLane11:..0\n"));
        assert!(ext_speeds(&data[..139]).is_none());
        assert!(samples_control(&data[..79]).is_none());
    }
}
