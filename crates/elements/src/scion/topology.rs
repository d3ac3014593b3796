//! The reference router's configuration folder: `topology.json` (local
//! ISD-AS, border routers with their internal address and interfaces) and
//! `keys/master0.key` (base64 master key; the forwarding key is derived
//! with PBKDF2, see [`super::mac::derive_key`]).

use base64::Engine;
use linerate_wire::scion::Ia;
use serde_json::Value;
use std::net::SocketAddr;
use std::path::Path;

/// The link type of an interface (`link_to`).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum LinkType {
    /// `core`.
    Core,
    /// `parent`.
    Parent,
    /// `child`.
    Child,
    /// `peer`.
    Peer,
}

impl LinkType {
    fn parse(s: &str) -> Option<LinkType> {
        match s.to_ascii_lowercase().as_str() {
            "core" => Some(LinkType::Core),
            "parent" => Some(LinkType::Parent),
            "child" => Some(LinkType::Child),
            "peer" => Some(LinkType::Peer),
            _ => None,
        }
    }
}

/// One interface of the AS.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Interface {
    /// Interface id.
    pub ifid: u16,
    /// Link type.
    pub link_to: LinkType,
    /// Neighbour ISD-AS.
    pub neighbor: Ia,
    /// Underlay address of this side.
    pub local: SocketAddr,
    /// Underlay address of the neighbour.
    pub remote: SocketAddr,
    /// For interfaces of other border routers of the AS (sibling links):
    /// that router's internal address. `None` for our own interfaces.
    pub sibling: Option<SocketAddr>,
}

/// The parts of `topology.json` and the key the data plane needs.
#[derive(Debug, Clone)]
pub struct Topology {
    /// Local ISD-AS.
    pub ia: Ia,
    /// Whether the AS is core.
    pub core: bool,
    /// This router's id in `border_routers`.
    pub router_id: String,
    /// This router's internal address.
    pub internal: SocketAddr,
    /// Every interface of the AS (ours and siblings').
    pub interfaces: Vec<Interface>,
    /// Control service addresses (SVC CS).
    pub cs: Vec<SocketAddr>,
    /// Discovery service addresses (SVC DS; falls back to CS).
    pub ds: Vec<SocketAddr>,
    /// The forwarding key.
    pub key: [u8; 16],
}

fn addr(v: &Value, what: &str) -> Result<SocketAddr, String> {
    let s = v
        .as_str()
        .ok_or_else(|| format!("{what}: expected \"ip:port\""))?;
    s.parse().map_err(|_| format!("{what}: bad address {s:?}"))
}

fn services(j: &Value, key: &str) -> Result<Vec<SocketAddr>, String> {
    let mut v = Vec::new();
    if let Some(m) = j.get(key).and_then(Value::as_object) {
        for (name, s) in m {
            if let Some(a) = s.get("addr") {
                v.push(addr(a, &format!("{key}.{name}.addr"))?);
            }
        }
    }
    Ok(v)
}

impl Topology {
    /// Reads `dir/topology.json` and `dir/keys/master0.key`; `router` picks
    /// the border router (default: the first, in name order).
    pub fn load(dir: &Path, router: Option<&str>) -> Result<Topology, String> {
        let tp = dir.join("topology.json");
        let text = std::fs::read_to_string(&tp).map_err(|e| format!("{}: {e}", tp.display()))?;
        let kp = dir.join("keys").join("master0.key");
        let key = std::fs::read_to_string(&kp).map_err(|e| format!("{}: {e}", kp.display()))?;
        let master = base64::engine::general_purpose::STANDARD
            .decode(key.trim())
            .map_err(|e| format!("{}: {e}", kp.display()))?;
        Self::parse(&text, &master, router)
    }

    /// Parses topology JSON text with the raw master key.
    pub fn parse(text: &str, master: &[u8], router: Option<&str>) -> Result<Topology, String> {
        let j: Value = serde_json::from_str(text).map_err(|e| format!("topology.json: {e}"))?;
        let ia = j
            .get("isd_as")
            .and_then(Value::as_str)
            .and_then(Ia::parse)
            .ok_or("topology.json: missing or bad isd_as")?;
        let core = j
            .get("attributes")
            .and_then(Value::as_array)
            .is_some_and(|a| a.iter().any(|x| x.as_str() == Some("core")));
        let brs = j
            .get("border_routers")
            .and_then(Value::as_object)
            .ok_or("topology.json: missing border_routers")?;
        let router_id = match router {
            Some(r) if brs.contains_key(r) => r.to_string(),
            Some(r) => return Err(format!("topology.json: no border router {r:?}")),
            None => brs
                .keys()
                .next()
                .ok_or("topology.json: no border routers")?
                .clone(),
        };
        let mut internal = None;
        let mut interfaces = Vec::new();
        for (id, br) in brs {
            let ia_addr = addr(
                br.get("internal_addr").unwrap_or(&Value::Null),
                &format!("{id}.internal_addr"),
            )?;
            let ours = *id == router_id;
            if ours {
                internal = Some(ia_addr);
            }
            let Some(ifs) = br.get("interfaces").and_then(Value::as_object) else {
                continue;
            };
            for (ifid, i) in ifs {
                let what = format!("{id}.interfaces.{ifid}");
                let ifid: u16 = ifid
                    .parse()
                    .map_err(|_| format!("{what}: bad interface id"))?;
                if ifid == 0 {
                    return Err(format!("{what}: interface id 0 is reserved"));
                }
                let u = i.get("underlay").unwrap_or(&Value::Null);
                let local = u
                    .get("local")
                    .or_else(|| u.get("public"))
                    .unwrap_or(&Value::Null);
                interfaces.push(Interface {
                    ifid,
                    link_to: i
                        .get("link_to")
                        .and_then(Value::as_str)
                        .and_then(LinkType::parse)
                        .ok_or(format!("{what}: bad link_to"))?,
                    neighbor: i
                        .get("isd_as")
                        .and_then(Value::as_str)
                        .and_then(Ia::parse)
                        .ok_or(format!("{what}: bad isd_as"))?,
                    local: addr(local, &format!("{what}.underlay.local"))?,
                    remote: addr(
                        u.get("remote").unwrap_or(&Value::Null),
                        &format!("{what}.underlay.remote"),
                    )?,
                    sibling: (!ours).then_some(ia_addr),
                });
            }
        }
        interfaces.sort_by_key(|i| i.ifid);
        if interfaces.windows(2).any(|w| w[0].ifid == w[1].ifid) {
            return Err("topology.json: duplicate interface id".into());
        }
        let cs = services(&j, "control_service")?;
        let mut ds = services(&j, "discovery_service")?;
        if ds.is_empty() {
            ds = cs.clone();
        }
        Ok(Topology {
            ia,
            core,
            router_id,
            internal: internal.ok_or("topology.json: router has no internal_addr")?,
            interfaces,
            cs,
            ds,
            key: super::mac::derive_key(master),
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    pub const TOPO: &str = r#"{
      "isd_as": "1-ff00:0:110", "attributes": ["core"], "mtu": 1472,
      "control_service": {"cs1": {"addr": "10.0.0.10:31000"}},
      "border_routers": {
        "br1": {"internal_addr": "10.0.0.1:30042", "interfaces": {
          "1": {"underlay": {"local": "192.0.2.1:50000", "remote": "192.0.2.2:50000"},
                "isd_as": "1-ff00:0:111", "link_to": "child", "mtu": 1472}}},
        "br2": {"internal_addr": "10.0.0.2:30042", "interfaces": {
          "2": {"underlay": {"local": "[2001:db8::1]:50000", "remote": "[2001:db8::2]:50000"},
                "isd_as": "1-ff00:0:120", "link_to": "core"}}}
      }}"#;

    #[test]
    fn parses_reference_topology() {
        let t = Topology::parse(TOPO, b"scion-vectors-k0", Some("br1")).unwrap();
        assert_eq!(t.ia.to_string(), "1-ff00:0:110");
        assert!(t.core);
        assert_eq!(t.internal, "10.0.0.1:30042".parse().unwrap());
        assert_eq!(t.interfaces.len(), 2);
        assert_eq!(t.interfaces[0].link_to, LinkType::Child);
        assert_eq!(t.interfaces[0].sibling, None);
        assert_eq!(
            t.interfaces[1].sibling,
            Some("10.0.0.2:30042".parse().unwrap())
        );
        assert_eq!(t.ds, t.cs);
        assert_eq!(t.key[..2], [0x61, 0xfd]);
        assert!(Topology::parse(TOPO, b"", Some("br9")).is_err());
        assert!(Topology::parse("{}", b"", None).is_err());
    }
}
