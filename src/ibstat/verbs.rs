//! Where `ibstat`'s values come from here: verbs, and three sysfs files read as libibumad
//! reads them (infiniband-diags reads all of them from sysfs through libibumad).

use rdma_verbs::{Context, DeviceList};

use super::ca::{CaInfo, PortInfo};
use super::names;
use crate::sysfs;

/// `ENOSYS` (Linux), the errno of `ibv_get_device_list` without kernel support.
const ENOSYS: i32 = 38;

/// The devices `ibstat` shows, with their node type names, sorted by name.
pub fn ca_names() -> rdma_verbs::Result<Vec<(String, &'static str)>> {
    let list = match DeviceList::new() {
        Ok(list) => list,
        // No RDMA support in the kernel: like a missing /sys/class/infiniband for libibumad.
        Err(err) if err.raw_os_error() == Some(ENOSYS) => return Ok(Vec::new()),
        Err(err) => return Err(err),
    };
    let mut names: Vec<(String, &'static str)> = list
        .iter()
        .filter_map(|d| Some((d.name().to_owned(), names::node_type(d.node_type())?)))
        .collect();
    names.sort();
    Ok(names)
}

/// The port GUIDs of device `name` (`ibstat -p` prints the non-zero ones).
pub fn port_guids(name: &str) -> rdma_verbs::Result<Vec<u64>> {
    gid0_interface_ids(&Context::open(name)?)
}

/// The interface ID of GID 0 of each port.
fn gid0_interface_ids(ctx: &Context) -> rdma_verbs::Result<Vec<u64>> {
    (1..=ctx.port_count()?)
        .map(|port| Ok(ctx.query_gid(port, 0)?.interface_id()))
        .collect()
}

/// Everything `ibstat` prints about device `name` of node type `node_type`; why not, as
/// text.
pub fn query_ca(name: &str, node_type: &'static str) -> Result<CaInfo, String> {
    let ctx = Context::open(name).map_err(|e| e.to_string())?;
    let attr = ctx.query_device().map_err(|e| e.to_string())?;
    let guids = gid0_interface_ids(&ctx).map_err(|e| e.to_string())?;
    let mut ports = Vec::new();
    for (port, guid) in (1..=attr.phys_port_cnt).zip(guids) {
        let port_attr = ctx.query_port(port).map_err(|e| e.to_string())?;
        let info = PortInfo::new(port, &port_attr, guid)
            .ok_or_else(|| format!("port {port} has a width sysfs cannot show"))?;
        ports.push(info);
    }
    Ok(CaInfo {
        name: name.to_owned(),
        node_type,
        ca_type: sysfs::read_umad(name, "hca_type", 40),
        num_ports: attr.phys_port_cnt,
        fw_ver: sysfs::read_umad(name, "fw_ver", 20),
        hw_ver: sysfs::read_umad(name, "hw_rev", 20),
        node_guid: attr.node_guid,
        sys_image_guid: attr.sys_image_guid,
        ports,
    })
}
