//! Fields at IBTA bit offsets: bit 0 is the most significant bit of byte 0, and a field of
//! `width` bits at `offset` is big-endian. Callers pass offsets inside their fixed-size
//! buffers (checked by the tests of each layout).

/// The `width`-bit field (1 to 64 bits) at bit `offset` of `bytes`.
pub(crate) fn get(bytes: &[u8], offset: usize, width: usize) -> u64 {
    let first = offset / 8;
    let last = (offset + width - 1) / 8;
    let mut acc: u128 = 0;
    for &b in &bytes[first..=last] {
        acc = (acc << 8) | u128::from(b);
    }
    let right = (last + 1) * 8 - (offset + width);
    ((acc >> right) & ((1u128 << width) - 1)) as u64
}

/// Writes the low `width` bits of `value` as the field at bit `offset` of `bytes`, leaving
/// the other bits as they are.
pub(crate) fn set(bytes: &mut [u8], offset: usize, width: usize, value: u64) {
    let first = offset / 8;
    let last = (offset + width - 1) / 8;
    let right = (last + 1) * 8 - (offset + width);
    let mask = ((1u128 << width) - 1) << right;
    let mut acc: u128 = 0;
    for &b in &bytes[first..=last] {
        acc = (acc << 8) | u128::from(b);
    }
    acc = (acc & !mask) | ((u128::from(value) << right) & mask);
    for (i, b) in bytes[first..=last].iter_mut().rev().enumerate() {
        *b = (acc >> (8 * i)) as u8;
    }
}

/// Declares a fixed-size attribute as a struct of fields, each with its IBTA bit offset and
/// width given once, with `decode` (from the first SIZE bytes of any slice) and `encode`
/// (reserved bits zero, each value's bits beyond its field's width dropped).
macro_rules! layout {
    ($(#[$sdoc:meta])* $struct:ident, $size:expr;
     $($(#[$doc:meta])* $name:ident: $ty:ty = ($offset:expr, $width:expr),)*) => {
        $(#[$sdoc])*
        #[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
        pub struct $struct {
            $($(#[$doc])* pub $name: $ty,)*
        }

        impl $struct {
            /// Size of the attribute in bytes.
            pub const SIZE: usize = $size;

            /// Decodes the first `SIZE` bytes of `bytes`.
            pub fn decode(bytes: &[u8]) -> Result<$struct, MadError> {
                let b = need(bytes, Self::SIZE)?;
                Ok($struct { $($name: get(b, $offset, $width) as $ty,)* })
            }

            /// Encodes the `SIZE` bytes.
            pub fn encode(&self) -> [u8; $size] {
                let mut b = [0; $size];
                $(set(&mut b, $offset, $width, u64::from(self.$name));)*
                b
            }
        }
    };
}
pub(crate) use layout;

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn fields_are_big_endian_from_the_msb() {
        let bytes = [0b1010_0000, 0x12, 0x34, 0xff];
        assert_eq!(get(&bytes, 0, 1), 1);
        assert_eq!(get(&bytes, 1, 1), 0);
        assert_eq!(get(&bytes, 0, 4), 0b1010);
        assert_eq!(get(&bytes, 8, 16), 0x1234);
        assert_eq!(get(&bytes, 12, 8), 0x23);
        assert_eq!(get(&bytes, 0, 32), 0xa012_34ff);
    }

    #[test]
    fn set_changes_only_its_bits() {
        let mut bytes = [0xff; 4];
        set(&mut bytes, 12, 8, 0);
        assert_eq!(bytes, [0xff, 0xf0, 0x0f, 0xff]);
        set(&mut bytes, 12, 8, 0x1ab); // wider than the field: high bits dropped
        assert_eq!(bytes, [0xff, 0xfa, 0xbf, 0xff]);
        let mut wide = [0u8; 9];
        set(&mut wide, 4, 64, u64::MAX);
        assert_eq!(get(&wide, 4, 64), u64::MAX);
        assert_eq!(wide[0], 0x0f);
        assert_eq!(wide[8], 0xf0);
    }
}
