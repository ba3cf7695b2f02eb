//! The port a tool talks through and its requests, as libibmad's `mad_rpc_open_port`,
//! `smp_query_via`/`smp_set_via`, `sa_rpc_call` and `mad_rpc` do them: the same warnings on
//! stderr (with `-e` and `-d`, the same extra ones) when a request fails, as libibmad
//! prints them.
//!
//! It knows nothing of command lines or exit statuses: it is opened with an [`RpcConfig`]
//! and says why it could not be with an [`OpenError`]; the tools (through
//! `options::open_rpc`) turn that into the C tools' message and status.

use std::fmt;
use std::time::Duration;

use ibumad::mad::{MadHeader, Route, SaMad, Smp, SA_CLASS, SA_CLASS_VERSION};
use ibumad::{Address, Port, MAD_SIZE};

use super::addr::{Combined, Dest};
use crate::cli::Output;
use crate::ibdiag;

/// libibmad's default MAD timeout.
const DEFAULT_TIMEOUT_MS: u32 = 1000;
/// How many times libibmad sends a request before giving up.
const TRIES: u32 = 3;
/// Most hops of a directed route.
const MAX_HOPS: usize = 63;

/// What the transport needs to open a port and send requests (the C tools' `ibd_*`
/// globals that libibmad reads).
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct RpcConfig {
    /// The CA (`None`: libibumad's default).
    pub ca: Option<String>,
    /// The port number (below 1: the first active port).
    pub port: i32,
    /// MAD timeout in ms (0: libibmad's default, 1000).
    pub timeout_ms: u32,
    /// Warn about failed sends and receives, as `-e` asks.
    pub show_errors: bool,
    /// Debug level (`-d`, counted): above 0, each request is named on stderr.
    pub debug: u32,
    /// The M_Key sent with SMPs.
    pub m_key: u64,
}

/// A port that could not be opened (`mad_rpc_open_port` failing).
#[derive(Debug)]
pub struct OpenError {
    /// The CA asked for.
    pub ca: Option<String>,
    /// The port number asked for.
    pub port: i32,
    /// Why libibumad refused.
    pub source: ibumad::Error,
}

impl OpenError {
    /// The CA as the C tools print it: `(null)` for the default.
    pub fn shown_ca(&self) -> &str {
        self.ca.as_deref().unwrap_or("(null)")
    }
}

impl fmt::Display for OpenError {
    /// libibmad's warning: `can't open UMAD port (ca:port)`.
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(
            f,
            "can't open UMAD port ({}:{})",
            self.shown_ca(),
            self.port
        )
    }
}

impl std::error::Error for OpenError {
    fn source(&self) -> Option<&(dyn std::error::Error + 'static)> {
        Some(&self.source)
    }
}

/// An open port and how its requests are sent.
pub struct Rpc {
    port: Port,
    /// The CA, as configured.
    pub ca: Option<String>,
    /// The port number, as configured.
    pub port_num: i32,
    timeout_ms: u32,
    show_errors: bool,
    debug: u32,
    m_key: u64,
}

impl Rpc {
    /// `mad_rpc_open_port`: opens `config`'s port.
    pub fn open(config: &RpcConfig) -> Result<Rpc, OpenError> {
        // libibumad opens the first active port for any port number below 1.
        match Port::open(config.ca.as_deref(), config.port.max(0).unsigned_abs()) {
            Ok(port) => Ok(Rpc {
                port,
                ca: config.ca.clone(),
                port_num: config.port,
                timeout_ms: if config.timeout_ms > 0 {
                    config.timeout_ms
                } else {
                    DEFAULT_TIMEOUT_MS
                },
                show_errors: config.show_errors,
                debug: config.debug,
                m_key: config.m_key,
            }),
            Err(source) => Err(OpenError {
                ca: config.ca.clone(),
                port: config.port,
                source,
            }),
        }
    }

    /// `smp_query_via`: Gets attribute `attr_id` (modifier `attr_mod`) of `dest`; its 64
    /// bytes, or `None` after the warnings.
    pub fn smp_get(
        &self,
        dest: &Dest,
        attr_id: u16,
        attr_mod: u32,
        out: &mut Output,
    ) -> Option<[u8; 64]> {
        self.smp(dest, Smp::get(attr_id, attr_mod, Route::Lid), out)
    }

    /// `smp_set_via`: Sets attribute `attr_id` (modifier `attr_mod`) of `dest` to `data`;
    /// the answer's 64 bytes, or `None` after the warnings.
    pub fn smp_set(
        &self,
        dest: &Dest,
        attr_id: u16,
        attr_mod: u32,
        data: &[u8; 64],
        out: &mut Output,
    ) -> Option<[u8; 64]> {
        let mut smp = Smp::get(attr_id, attr_mod, Route::Lid);
        smp.method = 0x02;
        smp.data = *data;
        self.smp(dest, smp, out)
    }

    /// `smp_query_via` along a combined route (`smpquery -c`): attribute `attr_id`
    /// (modifier `attr_mod`); its 64 bytes, or `None` after the warnings.
    pub fn smp_get_combined(
        &self,
        route: &Combined,
        attr_id: u16,
        attr_mod: u32,
        out: &mut Output,
    ) -> Option<[u8; 64]> {
        let mut smp = Smp::get(attr_id, attr_mod, Route::Lid);
        if !self.directed(&mut smp, &route.path, out) {
            return None;
        }
        if let Route::Directed { dr_slid, .. } = &mut smp.route {
            *dr_slid = route.slid;
        }
        self.send_smp(smp, 0x81, Address::smi(route.lid), route, out)
    }

    fn smp(&self, dest: &Dest, mut smp: Smp, out: &mut Output) -> Option<[u8; 64]> {
        let (class, to) = match dest {
            Dest::Lid(lid) => (0x01, Address::smi(*lid)),
            Dest::Dr(path) => {
                if !self.directed(&mut smp, path, out) {
                    return None;
                }
                (0x81, Address::smi(0xffff))
            }
        };
        self.send_smp(smp, class, to, dest, out)
    }

    /// Routes `smp` along `path` (entry 0, the local port, not sent); false after the
    /// warning if the path is too long (`mad_encode`).
    fn directed(&self, smp: &mut Smp, path: &[u8], out: &mut Output) -> bool {
        let hops = path.len().saturating_sub(1);
        if hops > MAX_HOPS {
            let msg = format!("dr path with hop count {hops}");
            ibdiag::warn(out, "mad_encode", &msg);
            return false;
        }
        smp.route = Route::directed(path.get(1..).unwrap_or_default());
        true
    }

    /// Sends `smp` (of `class`) to `to`, shown as `dest` in the warnings; its data.
    fn send_smp(
        &self,
        mut smp: Smp,
        class: u8,
        to: Address,
        dest: &dyn fmt::Display,
        out: &mut Output,
    ) -> Option<[u8; 64]> {
        if self.debug > 0 {
            let msg = format!(
                "attr {:#x} mod {:#x} route {dest}",
                smp.attr_id, smp.attr_mod
            );
            ibdiag::warn(out, "smp_query_status_via", &msg);
        }
        smp.m_key = self.m_key;
        let request = smp.encode().ok()?;
        let answer = self.rpc(class, 1, &request, &to, dest, out)?;
        Smp::decode(&answer).ok().map(|s| s.data)
    }

    /// `sa_rpc_call`: sends the SA request `mad` to the SA at `sm_lid`; the answer, or
    /// `None` after the warnings.
    pub fn sa(&self, mad: &SaMad, sm_lid: u16, out: &mut Output) -> Option<SaMad> {
        let dest = Dest::Lid(sm_lid);
        if self.debug > 0 {
            let msg = format!(
                "attr {:#x} mod {:#x} route {dest}",
                mad.attr_id, mad.attr_mod
            );
            ibdiag::warn(out, "sa_rpc_call", &msg);
        }
        if sm_lid == 0 {
            ibdiag::warn(out, "sa_rpc_call", "only lid routes are supported");
            return None;
        }
        let answer = self.rpc_named(
            "mad_rpc_rmpp",
            SA_CLASS,
            SA_CLASS_VERSION,
            &mad.encode(),
            &Address::gsi(sm_lid),
            &dest,
            out,
        )?;
        SaMad::decode(&answer).ok()
    }

    /// `mad_rpc` of a general services request (performance, ...) of `class` at `version`
    /// to `lid`: the answer, or `None` after the warnings.
    pub fn gs(
        &self,
        class: u8,
        version: u8,
        mad: &[u8; MAD_SIZE],
        lid: u16,
        out: &mut Output,
    ) -> Option<[u8; MAD_SIZE]> {
        self.rpc(
            class,
            version,
            mad,
            &Address::gsi(lid),
            &Dest::Lid(lid),
            out,
        )
    }

    fn rpc(
        &self,
        class: u8,
        version: u8,
        mad: &[u8; MAD_SIZE],
        to: &Address,
        dest: &dyn fmt::Display,
        out: &mut Output,
    ) -> Option<[u8; MAD_SIZE]> {
        self.rpc_named("mad_rpc", class, version, mad, to, dest, out)
    }

    /// Sends `mad` with the timeout and tries of libibmad; the answer if its status is 0.
    #[allow(clippy::too_many_arguments)]
    fn rpc_named(
        &self,
        function: &str,
        class: u8,
        version: u8,
        mad: &[u8; MAD_SIZE],
        to: &Address,
        dest: &dyn fmt::Display,
        out: &mut Output,
    ) -> Option<[u8; MAD_SIZE]> {
        let timeout = Duration::from_millis(u64::from(self.timeout_ms));
        let answer = self
            .port
            .register(class, version)
            .and_then(|agent| agent.request(mad, to, timeout, TRIES - 1));
        let answer = match answer {
            Ok(answer) => answer,
            Err(err) => {
                if self.show_errors && matches!(err, ibumad::Error::Timeout { .. }) {
                    let total = self.timeout_ms.saturating_mul(TRIES);
                    let msg = format!("timeout after {TRIES} retries, {total} ms");
                    ibdiag::warn(out, "_do_madrpc", &msg);
                }
                let msg = format!("_do_madrpc failed; dport ({dest})");
                ibdiag::warn(out, function, &msg);
                return None;
            }
        };
        let status = MadHeader::decode(&answer).ok()?.status & 0x7fff;
        if status != 0 {
            if self.show_errors {
                let msg = format!("MAD completed with error status {status:#x}; dport ({dest})");
                ibdiag::warn(out, function, &msg);
            }
            return None;
        }
        Some(answer)
    }
}
