//! Two more attributes of the performance management class: PortSamplesControl (0x0010,
//! IBA 16.1.3.2), which sets up and reports the port's sampling, and
//! PortExtendedSpeedsCounters (0x001F, IBA 16.1.4.12), the per-lane error counters of the
//! extended link speeds (FDR and up). Both are a performance MAD's data (from byte 64).

use super::bits::{get, set};
use super::{need, MadError};

/// PortSamplesControl (IBA 16.1.3.2); bits not listed are reserved (encoded as zero).
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct PortSamplesControl {
    /// OpCode.
    pub op_code: u8,
    /// PortSelect.
    pub port_select: u8,
    /// Tick.
    pub tick: u8,
    /// CounterWidth (3 bits).
    pub counter_width: u8,
    /// CounterMask0 (3 bits).
    pub counter_mask0: u8,
    /// CounterMasks1to9 (27 bits, 3 per counter).
    pub counter_masks1to9: u32,
    /// CounterMasks10to14 (15 bits, 3 per counter).
    pub counter_masks10to14: u16,
    /// SampleMechanisms.
    pub sample_mechanisms: u8,
    /// SampleStatus (2 bits).
    pub sample_status: u8,
    /// OptionMask.
    pub option_mask: u64,
    /// VendorMask.
    pub vendor_mask: u64,
    /// SampleStart.
    pub sample_start: u32,
    /// SampleInterval.
    pub sample_interval: u32,
    /// Tag.
    pub tag: u16,
    /// CounterSelect0 to CounterSelect14.
    pub counter_select: [u16; 15],
    /// SamplesOnlyOptionMask.
    pub samples_only_option_mask: u64,
}

/// The scalar fields of [`PortSamplesControl`] before the counter selects: bit offset and
/// width, in the struct's order.
const PSC_FIELDS: [(usize, usize); 14] = [
    (0, 8),
    (8, 8),
    (16, 8),
    (29, 3),
    (34, 3),
    (37, 27),
    (65, 15),
    (80, 8),
    (94, 2),
    (96, 64),
    (160, 64),
    (224, 32),
    (256, 32),
    (288, 16),
];
/// Bit offset of CounterSelect0 (each 16 bits).
const PSC_COUNTER_SELECT: usize = 304;
/// Bit offset of SamplesOnlyOptionMask.
const PSC_SAMPLES_ONLY: usize = 576;

impl PortSamplesControl {
    /// AttributeID of PortSamplesControl.
    pub const ATTR_ID: u16 = 0x0010;
    /// Size of the attribute in bytes (up to SamplesOnlyOptionMask).
    pub const SIZE: usize = 80;

    /// The attribute from the first [`SIZE`](Self::SIZE) bytes of `bytes`.
    pub fn decode(bytes: &[u8]) -> Result<Self, MadError> {
        let b = need(bytes, Self::SIZE)?;
        let f: Vec<u64> = PSC_FIELDS.iter().map(|&(o, w)| get(b, o, w)).collect();
        Ok(Self {
            op_code: f[0] as u8,
            port_select: f[1] as u8,
            tick: f[2] as u8,
            counter_width: f[3] as u8,
            counter_mask0: f[4] as u8,
            counter_masks1to9: f[5] as u32,
            counter_masks10to14: f[6] as u16,
            sample_mechanisms: f[7] as u8,
            sample_status: f[8] as u8,
            option_mask: f[9],
            vendor_mask: f[10],
            sample_start: f[11] as u32,
            sample_interval: f[12] as u32,
            tag: f[13] as u16,
            counter_select: std::array::from_fn(|i| get(b, PSC_COUNTER_SELECT + 16 * i, 16) as u16),
            samples_only_option_mask: get(b, PSC_SAMPLES_ONLY, 64),
        })
    }

    /// The scalar fields before the counter selects, in [`PSC_FIELDS`]' order.
    fn scalars(&self) -> [u64; 14] {
        [
            self.op_code.into(),
            self.port_select.into(),
            self.tick.into(),
            self.counter_width.into(),
            self.counter_mask0.into(),
            self.counter_masks1to9.into(),
            self.counter_masks10to14.into(),
            self.sample_mechanisms.into(),
            self.sample_status.into(),
            self.option_mask,
            self.vendor_mask,
            self.sample_start.into(),
            self.sample_interval.into(),
            self.tag.into(),
        ]
    }

    /// The attribute's bytes (fields wider than their bits are cut to them).
    pub fn encode(&self) -> [u8; Self::SIZE] {
        let mut b = [0; Self::SIZE];
        for (&(offset, width), value) in PSC_FIELDS.iter().zip(self.scalars()) {
            set(&mut b, offset, width, value);
        }
        for (i, &select) in self.counter_select.iter().enumerate() {
            set(&mut b, PSC_COUNTER_SELECT + 16 * i, 16, select.into());
        }
        set(&mut b, PSC_SAMPLES_ONLY, 64, self.samples_only_option_mask);
        b
    }
}

/// PortExtendedSpeedsCounters (IBA 16.1.4.12, RS-FEC not active): the counters of up to
/// 12 lanes; bits not listed are reserved (encoded as zero).
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct PortExtendedSpeedsCounters {
    /// PortSelect.
    pub port_select: u8,
    /// CounterSelect (64 bits).
    pub counter_select: u64,
    /// SyncHeaderErrorCounter.
    pub sync_header_error_counter: u16,
    /// UnknownBlockCounter.
    pub unknown_block_counter: u16,
    /// ErrorDetectionCounterLane0 to 11.
    pub error_detection: [u16; 12],
    /// FECCorrectableBlockCounterLane0 to 11.
    pub fec_correctable: [u32; 12],
    /// FECUncorrectableBlockCounterLane0 to 11.
    pub fec_uncorrectable: [u32; 12],
}

/// Bit offsets in [`PortExtendedSpeedsCounters`]: the per-lane runs.
const PESC_ERROR_DETECTION: usize = 160;
const PESC_FEC_CORRECTABLE: usize = 352;
const PESC_FEC_UNCORRECTABLE: usize = 736;

impl PortExtendedSpeedsCounters {
    /// AttributeID of PortExtendedSpeedsCounters.
    pub const ATTR_ID: u16 = 0x001f;
    /// Size of the attribute in bytes (up to the last lane's FECUncorrectableBlockCounter).
    pub const SIZE: usize = 140;

    /// The attribute from the first [`SIZE`](Self::SIZE) bytes of `bytes`.
    pub fn decode(bytes: &[u8]) -> Result<Self, MadError> {
        let b = need(bytes, Self::SIZE)?;
        Ok(Self {
            port_select: get(b, 8, 8) as u8,
            counter_select: get(b, 64, 64),
            sync_header_error_counter: get(b, 128, 16) as u16,
            unknown_block_counter: get(b, 144, 16) as u16,
            error_detection: std::array::from_fn(|i| {
                get(b, PESC_ERROR_DETECTION + 16 * i, 16) as u16
            }),
            fec_correctable: std::array::from_fn(|i| {
                get(b, PESC_FEC_CORRECTABLE + 32 * i, 32) as u32
            }),
            fec_uncorrectable: std::array::from_fn(|i| {
                get(b, PESC_FEC_UNCORRECTABLE + 32 * i, 32) as u32
            }),
        })
    }

    /// The attribute's bytes.
    pub fn encode(&self) -> [u8; Self::SIZE] {
        let mut b = [0; Self::SIZE];
        set(&mut b, 8, 8, self.port_select.into());
        set(&mut b, 64, 64, self.counter_select);
        set(&mut b, 128, 16, self.sync_header_error_counter.into());
        set(&mut b, 144, 16, self.unknown_block_counter.into());
        for i in 0..12 {
            set(
                &mut b,
                PESC_ERROR_DETECTION + 16 * i,
                16,
                self.error_detection[i].into(),
            );
            set(
                &mut b,
                PESC_FEC_CORRECTABLE + 32 * i,
                32,
                self.fec_correctable[i].into(),
            );
            set(
                &mut b,
                PESC_FEC_UNCORRECTABLE + 32 * i,
                32,
                self.fec_uncorrectable[i].into(),
            );
        }
        b
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn samples_control_fields_at_their_bits() {
        let mut data = [0u8; 192];
        // OpCode 1, PortSelect 3, Tick 0x20, CounterWidth 5; CounterMask0 7 and the first
        // bits of CounterMasks1to9; CounterMasks10to14 all ones; SampleMechanisms 2,
        // SampleStatus 3.
        data[..8].copy_from_slice(&[1, 3, 0x20, 0x05, 0x3c, 0, 0, 0x01]);
        data[8..12].copy_from_slice(&[0x7f, 0xff, 0x02, 0x03]);
        data[36..38].copy_from_slice(&[0xab, 0xcd]);
        data[38..40].copy_from_slice(&[0x00, 0x01]);
        data[66..68].copy_from_slice(&[0x12, 0x34]);
        data[72..80].copy_from_slice(&9u64.to_be_bytes());
        let psc = PortSamplesControl::decode(&data).unwrap();
        assert_eq!((psc.op_code, psc.port_select, psc.tick), (1, 3, 0x20));
        assert_eq!((psc.counter_width, psc.counter_mask0), (5, 7));
        assert_eq!(psc.counter_masks1to9, 0x0400_0001);
        assert_eq!(psc.counter_masks10to14, 0x7fff);
        assert_eq!((psc.sample_mechanisms, psc.sample_status), (2, 3));
        assert_eq!((psc.tag, psc.counter_select[0]), (0xabcd, 1));
        assert_eq!(psc.counter_select[14], 0x1234);
        assert_eq!(psc.samples_only_option_mask, 9);
        assert_eq!(psc.encode(), data[..PortSamplesControl::SIZE]);
        assert!(PortSamplesControl::decode(&data[..79]).is_err());
    }

    #[test]
    fn ext_speeds_counters_lanes() {
        let mut data = [0u8; 192];
        data[1] = 2;
        data[8..16].copy_from_slice(&u64::MAX.to_be_bytes());
        data[16..20].copy_from_slice(&[0, 5, 0, 6]);
        data[20..22].copy_from_slice(&[0, 7]);
        data[42..44].copy_from_slice(&[1, 0]);
        data[44..48].copy_from_slice(&8u32.to_be_bytes());
        data[136..140].copy_from_slice(&0x0102_0304u32.to_be_bytes());
        let pesc = PortExtendedSpeedsCounters::decode(&data).unwrap();
        assert_eq!((pesc.port_select, pesc.counter_select), (2, u64::MAX));
        assert_eq!(
            (pesc.sync_header_error_counter, pesc.unknown_block_counter),
            (5, 6)
        );
        assert_eq!(
            (pesc.error_detection[0], pesc.error_detection[11]),
            (7, 0x100)
        );
        assert_eq!(pesc.fec_correctable[0], 8);
        assert_eq!(pesc.fec_uncorrectable[11], 0x0102_0304);
        assert_eq!(pesc.encode(), data[..PortExtendedSpeedsCounters::SIZE]);
        assert!(PortExtendedSpeedsCounters::decode(&data[..139]).is_err());
    }
}
