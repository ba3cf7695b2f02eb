//! Subnet administration MADs (class 0x03, IBA 15.2): the SA header after the common one
//! ([`SaMad`]: RMPP header, SM_Key, AttributeOffset, ComponentMask, then the data) and the
//! PathRecord attribute (0x0035, 15.2.5.16), which the tools ask to turn a GID into a LID.

use super::bits::{get, layout, set};
use super::{need, MadError, MadHeader};
use crate::MAD_SIZE;

/// Management class of subnet administration.
pub const SA_CLASS: u8 = 0x03;
/// Class version of subnet administration.
pub const SA_CLASS_VERSION: u8 = 2;
/// Where the data of an SA MAD starts.
pub const SA_DATA_OFFSET: usize = 56;

/// An SA MAD without RMPP segmentation: one record (or template) in its data.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct SaMad {
    /// Method: 0x01 Get, 0x81 GetResp, 0x12 GetTable, ...
    pub method: u8,
    /// Status (0 success).
    pub status: u16,
    /// TransactionID.
    pub tid: u64,
    /// AttributeID.
    pub attr_id: u16,
    /// AttributeModifier.
    pub attr_mod: u32,
    /// SM_Key.
    pub sm_key: u64,
    /// ComponentMask: which fields of the template the query matches on.
    pub component_mask: u64,
    /// The 200 bytes of data.
    pub data: [u8; MAD_SIZE - SA_DATA_OFFSET],
}

impl SaMad {
    /// A Get (0x01) of `attr_id` matching `template` on `component_mask`.
    pub fn get(attr_id: u16, component_mask: u64, template: &[u8]) -> SaMad {
        let mut data = [0; MAD_SIZE - SA_DATA_OFFSET];
        let n = template.len().min(data.len());
        data[..n].copy_from_slice(&template[..n]);
        SaMad {
            method: 0x01,
            status: 0,
            tid: 0,
            attr_id,
            attr_mod: 0,
            sm_key: 0,
            component_mask,
            data,
        }
    }

    /// Decodes an SA MAD from 256 bytes.
    pub fn decode(bytes: &[u8]) -> Result<SaMad, MadError> {
        let b = need(bytes, MAD_SIZE)?;
        let h = MadHeader::decode(b)?;
        if h.mgmt_class != SA_CLASS {
            return Err(MadError::Class(h.mgmt_class));
        }
        let mut data = [0; MAD_SIZE - SA_DATA_OFFSET];
        data.copy_from_slice(&b[SA_DATA_OFFSET..]);
        Ok(SaMad {
            method: h.method,
            status: h.status,
            tid: h.tid,
            attr_id: h.attr_id,
            attr_mod: h.attr_mod,
            sm_key: get(b, 36 * 8, 64),
            component_mask: get(b, 48 * 8, 64),
            data,
        })
    }

    /// Encodes the 256 bytes (RMPP header and AttributeOffset zero).
    pub fn encode(&self) -> [u8; MAD_SIZE] {
        let mut b = [0; MAD_SIZE];
        let h = MadHeader {
            base_version: 1,
            mgmt_class: SA_CLASS,
            class_version: SA_CLASS_VERSION,
            method: self.method,
            status: self.status,
            class_specific: 0,
            tid: self.tid,
            attr_id: self.attr_id,
            attr_mod: self.attr_mod,
        };
        b[..MadHeader::SIZE].copy_from_slice(&h.encode());
        set(&mut b, 36 * 8, 64, self.sm_key);
        set(&mut b, 48 * 8, 64, self.component_mask);
        b[SA_DATA_OFFSET..].copy_from_slice(&self.data);
        b
    }
}

layout! {
    /// PathRecord (IBA 15.2.5.16), each GID as its prefix and its GUID; bits not listed
    /// are reserved (encoded as zero).
    PathRecord, 64;
    /// ServiceID.
    service_id: u64 = (0, 64),
    /// DGID: subnet prefix.
    dgid_prefix: u64 = (64, 64),
    /// DGID: port GUID.
    dgid_guid: u64 = (128, 64),
    /// SGID: subnet prefix.
    sgid_prefix: u64 = (192, 64),
    /// SGID: port GUID.
    sgid_guid: u64 = (256, 64),
    /// DLID.
    dlid: u16 = (320, 16),
    /// SLID.
    slid: u16 = (336, 16),
    /// RawTraffic (1 bit).
    raw_traffic: u8 = (352, 1),
    /// FlowLabel (20 bits).
    flow_label: u32 = (356, 20),
    /// HopLimit.
    hop_limit: u8 = (376, 8),
    /// TClass.
    tclass: u8 = (384, 8),
    /// Reversible (1 bit).
    reversible: u8 = (392, 1),
    /// NumbPath (7 bits).
    numb_path: u8 = (393, 7),
    /// P_Key.
    pkey: u16 = (400, 16),
    /// QoSClass (12 bits).
    qos_class: u16 = (416, 12),
    /// SL (4 bits).
    sl: u8 = (428, 4),
    /// MTUSelector (2 bits).
    mtu_selector: u8 = (432, 2),
    /// MTU (6 bits).
    mtu: u8 = (434, 6),
    /// RateSelector (2 bits).
    rate_selector: u8 = (440, 2),
    /// Rate (6 bits).
    rate: u8 = (442, 6),
    /// PacketLifeTimeSelector (2 bits).
    packet_life_time_selector: u8 = (448, 2),
    /// PacketLifeTime (6 bits).
    packet_life_time: u8 = (450, 6),
    /// Preference.
    preference: u8 = (456, 8),
}

impl PathRecord {
    /// AttributeID of PathRecord.
    pub const ATTR_ID: u16 = 0x0035;
    /// ComponentMask bit of DGID.
    pub const COMP_DGID: u64 = 1 << 2;
    /// ComponentMask bit of SGID.
    pub const COMP_SGID: u64 = 1 << 3;
}

#[cfg(test)]
mod tests {
    use super::*;

    /// A GetResp(PathRecord) from Hca1 (LID 1, GUID 0x100001) to HcaDual's port 1 (GUID
    /// 0x100003, LID 5) on scripts/topologies/fabric.net, written out by hand from the IBA
    /// layout: header, SA header (ComponentMask SGID|DGID), then the record.
    fn answer() -> [u8; MAD_SIZE] {
        let mut b = [0u8; MAD_SIZE];
        b[..8].copy_from_slice(&[1, 0x03, 2, 0x81, 0, 0, 0, 0]);
        b[15] = 7; // TID
        b[16..18].copy_from_slice(&[0, 0x35]);
        b[55] = 0x0c;
        let r = &mut b[SA_DATA_OFFSET..];
        r[8] = 0xfe;
        r[9] = 0x80;
        r[16..24].copy_from_slice(&0x100003u64.to_be_bytes());
        r[24] = 0xfe;
        r[25] = 0x80;
        r[32..40].copy_from_slice(&0x100001u64.to_be_bytes());
        r[40..44].copy_from_slice(&[0, 5, 0, 1]);
        r[44..52].copy_from_slice(&[0, 0, 0, 0, 0, 0x81, 0xff, 0xff]);
        r[52..56].copy_from_slice(&[0, 0, 0x84, 0x82]);
        r[56] = 0x92;
        b
    }

    #[test]
    fn decodes_a_path_record_answer() {
        let mad = SaMad::decode(&answer()).unwrap();
        assert_eq!((mad.method, mad.status, mad.tid), (0x81, 0, 7));
        assert_eq!(mad.attr_id, PathRecord::ATTR_ID);
        assert_eq!(
            mad.component_mask,
            PathRecord::COMP_DGID | PathRecord::COMP_SGID
        );
        let pr = PathRecord::decode(&mad.data).unwrap();
        assert_eq!((pr.dgid_prefix, pr.dgid_guid), (0xfe80 << 48, 0x100003));
        assert_eq!((pr.sgid_prefix, pr.sgid_guid), (0xfe80 << 48, 0x100001));
        assert_eq!((pr.dlid, pr.slid), (5, 1));
        assert_eq!((pr.reversible, pr.numb_path, pr.pkey), (1, 1, 0xffff));
        assert_eq!((pr.sl, pr.mtu_selector, pr.mtu), (0, 2, 4));
        assert_eq!((pr.rate_selector, pr.rate), (2, 2));
        assert_eq!((pr.packet_life_time_selector, pr.packet_life_time), (2, 18));
        assert_eq!(SaMad::decode(&mad.encode()).unwrap(), mad);
        assert_eq!(PathRecord::decode(&pr.encode()).unwrap(), pr);
    }

    #[test]
    fn a_get_encodes_its_template() {
        let pr = PathRecord {
            dgid_prefix: 0xfe80 << 48,
            dgid_guid: 0x100003,
            ..PathRecord::default()
        };
        let b = SaMad::get(PathRecord::ATTR_ID, PathRecord::COMP_DGID, &pr.encode()).encode();
        assert_eq!(&b[..4], &[1, 0x03, 2, 0x01]);
        assert_eq!(&b[16..18], &[0, 0x35]);
        assert_eq!(b[55], 0x04);
        assert_eq!(&b[64..66], &[0xfe, 0x80]);
        assert_eq!(&b[72..80], &0x100003u64.to_be_bytes());
    }

    #[test]
    fn other_classes_and_short_input_are_errors() {
        let mut b = answer();
        b[1] = 0x81;
        assert_eq!(SaMad::decode(&b), Err(MadError::Class(0x81)));
        assert!(matches!(
            SaMad::decode(&b[..100]),
            Err(MadError::TooShort { .. })
        ));
    }
}
