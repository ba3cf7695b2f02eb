//! RDMA devices: `ibv_get_device_list` and friends.
//!
//! Its own raw file: the unsafe here is the whole point of the module, an array of device
//! pointers owned by [`DeviceList`] and the devices borrowed from it, down to opening one
//! (`ibv_open_device`), whose context it hands to [`Context::from_raw`]: `context/`
//! imports nothing of this module.

use std::ffi::CStr;
use std::fmt;
use std::ptr::NonNull;

use crate::context::Context;
use crate::error::{Error, Result};
use crate::ffi;

/// The RDMA devices of the system (`ibv_get_device_list`), freed on drop.
pub struct DeviceList {
    list: NonNull<*mut ffi::ibv_device>,
    len: usize,
}

// SAFETY: the list is an immutable array of device pointers owned by this value; libibverbs
// allows using them from any thread.
unsafe impl Send for DeviceList {}
// SAFETY: as above; nothing is mutated through a shared reference.
unsafe impl Sync for DeviceList {}

impl DeviceList {
    /// Lists the devices (`ibv_get_device_list`).
    pub fn new() -> Result<Self> {
        let mut num = 0;
        // SAFETY: num is a valid out pointer.
        let list = unsafe { ffi::ibv_get_device_list(&mut num) };
        let list = NonNull::new(list).ok_or_else(|| Error::last("ibv_get_device_list"))?;
        Ok(DeviceList {
            list,
            len: usize::try_from(num).unwrap_or(0),
        })
    }

    /// The devices, in the order libibverbs lists them.
    pub fn iter(&self) -> impl ExactSizeIterator<Item = Device<'_>> + '_ {
        self.as_slice().iter().map(|&raw| Device {
            // SAFETY: entries below len are non-null device pointers.
            raw: unsafe { NonNull::new_unchecked(raw) },
            _list: self,
        })
    }

    /// Number of devices.
    pub fn len(&self) -> usize {
        self.len
    }

    /// Whether there are no devices.
    pub fn is_empty(&self) -> bool {
        self.len == 0
    }

    /// The device named `name`.
    pub fn find(&self, name: &str) -> Result<Device<'_>> {
        self.iter()
            .find(|d| d.name() == name)
            .ok_or_else(|| Error::DeviceNotFound {
                name: name.to_owned(),
                available: self.names(),
            })
    }

    /// The first device.
    pub fn first(&self) -> Result<Device<'_>> {
        self.iter().next().ok_or(Error::NoDevices)
    }

    fn names(&self) -> String {
        let names: Vec<_> = self.iter().map(|d| d.name().to_owned()).collect();
        if names.is_empty() {
            "none".to_owned()
        } else {
            names.join(", ")
        }
    }

    fn as_slice(&self) -> &[*mut ffi::ibv_device] {
        // SAFETY: ibv_get_device_list returned an array of `len` device pointers that lives
        // until ibv_free_device_list in drop.
        unsafe { std::slice::from_raw_parts(self.list.as_ptr(), self.len) }
    }
}

impl Drop for DeviceList {
    fn drop(&mut self) {
        // SAFETY: the list came from ibv_get_device_list; Devices borrowing it are gone, and
        // contexts opened from them stay valid after the list is freed.
        unsafe { ffi::ibv_free_device_list(self.list.as_ptr()) };
    }
}

impl fmt::Debug for DeviceList {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_list().entries(self.iter()).finish()
    }
}

/// One device of a [`DeviceList`].
#[derive(Clone, Copy)]
pub struct Device<'list> {
    raw: NonNull<ffi::ibv_device>,
    _list: &'list DeviceList,
}

/// The kind of node a device is (`enum ibv_node_type`).
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
#[non_exhaustive]
pub enum NodeType {
    /// An InfiniBand channel adapter (also RoCE adapters and rxe).
    Ca,
    /// A switch.
    Switch,
    /// A router.
    Router,
    /// An iWARP NIC.
    Rnic,
    /// A usNIC (UDP).
    UsnicUdp,
    /// A usNIC.
    Usnic,
    /// A node type libibverbs does not know: the raw value.
    Unknown(i32),
}

impl NodeType {
    fn from_raw(raw: ffi::ibv_node_type) -> Self {
        use ffi::ibv_node_type as T;
        match raw {
            T::IBV_NODE_CA => NodeType::Ca,
            T::IBV_NODE_SWITCH => NodeType::Switch,
            T::IBV_NODE_ROUTER => NodeType::Router,
            T::IBV_NODE_RNIC => NodeType::Rnic,
            T::IBV_NODE_USNIC => NodeType::Usnic,
            T::IBV_NODE_USNIC_UDP => NodeType::UsnicUdp,
            other => NodeType::Unknown(other.0),
        }
    }
}

/// The transport a device speaks (`enum ibv_transport_type`).
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
#[non_exhaustive]
pub enum Transport {
    /// InfiniBand transport (also RoCE and rxe).
    InfiniBand,
    /// iWARP.
    Iwarp,
    /// usNIC.
    Usnic,
    /// usNIC over UDP.
    UsnicUdp,
    /// Unspecified (such as EFA).
    Unspecified,
    /// A transport libibverbs does not know: the raw value.
    Unknown(i32),
}

impl Transport {
    pub(crate) fn from_raw(raw: ffi::ibv_transport_type) -> Self {
        use ffi::ibv_transport_type as T;
        match raw {
            T::IBV_TRANSPORT_IB => Transport::InfiniBand,
            T::IBV_TRANSPORT_IWARP => Transport::Iwarp,
            T::IBV_TRANSPORT_USNIC => Transport::Usnic,
            T::IBV_TRANSPORT_USNIC_UDP => Transport::UsnicUdp,
            T::IBV_TRANSPORT_UNSPECIFIED => Transport::Unspecified,
            other => Transport::Unknown(other.0),
        }
    }
}

impl<'list> Device<'list> {
    /// The kernel name, such as `mlx5_0` or `rxe0` (`ibv_get_device_name`).
    pub fn name(&self) -> &'list str {
        // SAFETY: the device is valid while the list lives; its name is a NUL-terminated
        // array inside it.
        let name = unsafe { CStr::from_ptr(ffi::ibv_get_device_name(self.raw.as_ptr())) };
        name.to_str().unwrap_or("")
    }

    /// The node GUID in host byte order (`ibv_get_device_guid`).
    pub fn guid(&self) -> u64 {
        // SAFETY: the device is valid while the list lives.
        u64::from_be(unsafe { ffi::ibv_get_device_guid(self.raw.as_ptr()) })
    }

    /// The node type.
    pub fn node_type(&self) -> NodeType {
        // SAFETY: the device is valid while the list lives.
        NodeType::from_raw(unsafe { self.raw.as_ref() }.node_type)
    }

    /// The transport.
    pub fn transport(&self) -> Transport {
        // SAFETY: the device is valid while the list lives.
        Transport::from_raw(unsafe { self.raw.as_ref() }.transport_type)
    }

    /// Opens the device (`ibv_open_device`).
    pub fn open(&self) -> Result<Context> {
        // SAFETY: the device is valid while the list lives.
        let raw = unsafe { ffi::ibv_open_device(self.ptr()) };
        let raw = NonNull::new(raw).ok_or_else(|| Error::last("ibv_open_device"))?;
        // SAFETY: ibv_open_device returned an open context, which nothing else closes.
        Ok(unsafe { Context::from_raw(raw) })
    }

    /// The raw `ibv_device`, valid while the list lives.
    pub(crate) fn ptr(&self) -> *mut ffi::ibv_device {
        self.raw.as_ptr()
    }
}

impl Context {
    /// Opens the device named `name`.
    pub fn open(name: &str) -> Result<Self> {
        DeviceList::new()?.find(name)?.open()
    }

    /// Opens the first device libibverbs lists.
    pub fn open_first() -> Result<Self> {
        DeviceList::new()?.first()?.open()
    }
}

impl fmt::Debug for Device<'_> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("Device")
            .field("name", &self.name())
            .field("guid", &format_args!("{:016x}", self.guid()))
            .finish()
    }
}
