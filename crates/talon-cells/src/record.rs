//! The on-disk formats of the file store: cell records and their markers,
//! each authenticated whole with the store key.
//!
//! A cell record (`<id>.cell`):
//!
//! ```text
//!  0  "TLNC"                 magic
//!  4  2                      version (u8), then 3 zero bytes
//!  8  expires_at             u64 LE, milliseconds since the epoch
//! 16  nonce                  16 random bytes, new at every `put`
//! 32  generation             u64 LE, +1 at every `settle`
//! 40  header_len             u32 LE
//! 44  snapshot_len           u32 LE
//! 48  mac                    HMAC-SHA256, 32 bytes
//! 80  header                 JSON: scope, pending calls (args, results,
//!                            replaySafe), meta
//!  .. snapshot               the VM snapshot
//! ```
//!
//! `mac` = HMAC(store key, label ‖ len ‖ id ‖ len ‖ file name ‖ bytes
//! 0..48 ‖ header ‖ snapshot): it covers every byte of the file but itself
//! and binds the record to the cell id and the name it is stored under, so
//! an edited, truncated, extended, renamed or re-scoped record fails. The
//! first 48 bytes are fixed-size so the purge reads only them.
//!
//! A marker (`<nonce hex>.mark`) says what became of the record with that
//! nonce: `live` at some generation, or `consumed`. Layout: `"TLNM"`,
//! version, state, id length, 0, generation (u64 LE), expiry (u64 LE), the
//! id, then HMAC(store key, label ‖ nonce ‖ everything before the MAC).

use hmac::{Hmac, Mac};
use sha2::Sha256;
use talon_protocol::gateway::bounded::{AgentId, CellId, RunId, SessionId};

use crate::{CellError, CellScope, NestedError, PendingNestedCall, SuspendedCell};
use serde_json::{Value, json};
use std::time::{Duration, SystemTime, UNIX_EPOCH};

const MAGIC: &[u8; 4] = b"TLNC";
const VERSION: u8 = 2;
/// The fixed-size fields before the MAC.
pub(crate) const PREFIX_LEN: usize = 48;
const MAC_LEN: usize = 32;
/// Bytes before the header.
pub(crate) const HEAD_LEN: usize = PREFIX_LEN + MAC_LEN;
/// The largest JSON header a record may have (pending calls' arguments and
/// results live there).
pub const HEADER_CAP: usize = 16 << 20;

const RECORD_LABEL: &[u8] = b"talon-codemode/cell-record/v2\0";
const MARKER_LABEL: &[u8] = b"talon-codemode/cell-marker/v1\0";
const KEY_LABEL: &[u8] = b"talon-codemode/suspended-cell-store/v1";

const MARKER_MAGIC: &[u8; 4] = b"TLNM";
const MARKER_FIXED: usize = 24;
/// The largest marker file.
pub(crate) const MARKER_CAP: usize = MARKER_FIXED + 128 + MAC_LEN;

/// The key that authenticates the file store's records and markers:
/// derived from the sandbox's snapshot secret with its own label, so a
/// snapshot MAC and a record MAC can never be confused.
#[derive(Clone)]
pub struct StoreKey([u8; 32]);

impl std::fmt::Debug for StoreKey {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str("StoreKey(..)")
    }
}

impl StoreKey {
    /// The store key for a 32-byte secret (the snapshot key).
    pub fn derive(secret: &[u8; 32]) -> Self {
        let mut mac = hmac(secret);
        mac.update(KEY_LABEL);
        Self(mac.finalize().into_bytes().into())
    }

    fn mac(&self, label: &[u8]) -> Hmac<Sha256> {
        let mut mac = hmac(&self.0);
        mac.update(label);
        mac
    }
}

fn hmac(key: &[u8]) -> Hmac<Sha256> {
    match <Hmac<Sha256> as Mac>::new_from_slice(key) {
        Ok(mac) => mac,
        Err(_) => unreachable!("HMAC accepts keys of any length"),
    }
}

fn update_str(mac: &mut Hmac<Sha256>, text: &str) {
    mac.update(&(text.len() as u64).to_le_bytes());
    mac.update(text.as_bytes());
}

/// The fixed-size start of a record: all the purge reads.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) struct Prefix {
    pub expires_ms: u64,
    pub nonce: [u8; 16],
    pub generation: u64,
    header_len: u32,
    snapshot_len: u32,
}

impl Prefix {
    /// Parses the fixed fields (unauthenticated until the MAC is checked).
    pub fn parse(bytes: &[u8]) -> Option<Self> {
        let b = bytes.get(..PREFIX_LEN)?;
        if &b[..4] != MAGIC || b[4] != VERSION || b[5..8] != [0; 3] {
            return None;
        }
        Some(Self {
            expires_ms: le64(&b[8..16]),
            nonce: b[16..32].try_into().ok()?,
            generation: le64(&b[32..40]),
            header_len: le32(&b[40..44]),
            snapshot_len: le32(&b[44..48]),
        })
    }

    /// The declared header and snapshot sizes.
    pub fn lengths(&self) -> (usize, usize) {
        (self.header_len as usize, self.snapshot_len as usize)
    }

    fn write(&self, out: &mut Vec<u8>) {
        out.extend_from_slice(MAGIC);
        out.extend_from_slice(&[VERSION, 0, 0, 0]);
        out.extend_from_slice(&self.expires_ms.to_le_bytes());
        out.extend_from_slice(&self.nonce);
        out.extend_from_slice(&self.generation.to_le_bytes());
        out.extend_from_slice(&self.header_len.to_le_bytes());
        out.extend_from_slice(&self.snapshot_len.to_le_bytes());
    }
}

fn le32(b: &[u8]) -> u32 {
    u32::from_le_bytes([b[0], b[1], b[2], b[3]])
}

fn le64(b: &[u8]) -> u64 {
    let mut a = [0; 8];
    a.copy_from_slice(&b[..8]);
    u64::from_le_bytes(a)
}

/// The name a cell is stored under.
pub(crate) fn file_name(id: &str) -> String {
    format!("{id}.cell")
}

fn record_mac(
    key: &StoreKey,
    id: &str,
    prefix: &[u8],
    header: &[u8],
    snapshot: &[u8],
) -> Hmac<Sha256> {
    let mut mac = key.mac(RECORD_LABEL);
    update_str(&mut mac, id);
    update_str(&mut mac, &file_name(id));
    mac.update(prefix);
    mac.update(header);
    mac.update(snapshot);
    mac
}

/// Milliseconds since the epoch (0 before it).
pub(crate) fn millis(at: SystemTime) -> u64 {
    at.duration_since(UNIX_EPOCH)
        .map_or(0, |d| u64::try_from(d.as_millis()).unwrap_or(u64::MAX))
}

/// A record's identity besides its contents.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) struct Stamp {
    pub nonce: [u8; 16],
    pub generation: u64,
}

/// Encodes and seals a record. Fails when the header or the snapshot is
/// larger than the format allows.
pub(crate) fn encode(
    key: &StoreKey,
    cell: &SuspendedCell,
    stamp: Stamp,
) -> Result<Vec<u8>, CellError> {
    let header = header_json(cell).to_string().into_bytes();
    if header.len() > HEADER_CAP {
        return Err(CellError::HeaderTooLarge {
            size: header.len(),
            limit: HEADER_CAP,
        });
    }
    let snapshot_len = u32::try_from(cell.snapshot.len()).map_err(|_| CellError::TooLarge {
        size: cell.snapshot.len(),
        limit: u32::MAX as usize,
    })?;
    let prefix = Prefix {
        expires_ms: millis(cell.expires_at),
        nonce: stamp.nonce,
        generation: stamp.generation,
        header_len: header.len() as u32,
        snapshot_len,
    };
    let mut out = Vec::with_capacity(HEAD_LEN + header.len() + cell.snapshot.len());
    prefix.write(&mut out);
    let tag = record_mac(key, cell.id.as_str(), &out, &header, &cell.snapshot)
        .finalize()
        .into_bytes();
    out.extend_from_slice(&tag);
    out.extend_from_slice(&header);
    out.extend_from_slice(&cell.snapshot);
    Ok(out)
}

fn header_json(cell: &SuspendedCell) -> Value {
    let pending: Vec<Value> = cell
        .pending
        .iter()
        .map(|p| {
            let mut v = json!({"hostCallId": p.host_call_id, "callId": p.call_id, "toolId": p.tool_id,
                   "args": p.args, "replaySafe": p.replay_safe});
            match &p.result {
                Some(Ok(value)) => v["result"] = json!({"ok": value}),
                Some(Err(e)) => v["result"] = json!({"error": e.message, "code": e.code}),
                None => {}
            }
            v
        })
        .collect();
    json!({
        "scope": {"agentId": cell.scope.agent_id, "sessionId": cell.scope.session_id, "runId": cell.scope.run_id},
        "pending": pending,
        "meta": cell.meta,
    })
}

/// Checks and decodes a record stored as `<id>.cell`. Anything but an
/// intact record this store sealed for `id` is [`CellError::Tampered`].
pub(crate) fn open(
    key: &StoreKey,
    id: &str,
    bytes: &[u8],
) -> Result<(SuspendedCell, Stamp), CellError> {
    let tampered = || CellError::Tampered(id.to_owned());
    let prefix = Prefix::parse(bytes).ok_or_else(tampered)?;
    let header_len = prefix.header_len as usize;
    if header_len > HEADER_CAP
        || bytes.len() as u64
            != HEAD_LEN as u64 + u64::from(prefix.header_len) + u64::from(prefix.snapshot_len)
    {
        return Err(tampered());
    }
    let header = &bytes[HEAD_LEN..HEAD_LEN + header_len];
    let snapshot = &bytes[HEAD_LEN + header_len..];
    record_mac(key, id, &bytes[..PREFIX_LEN], header, snapshot)
        .verify_slice(&bytes[PREFIX_LEN..HEAD_LEN])
        .map_err(|_| tampered())?;
    let header: Value = serde_json::from_slice(header).map_err(|_| tampered())?;
    let cell = parse_header(id, &header, snapshot, prefix.expires_ms).ok_or_else(tampered)?;
    Ok((
        cell,
        Stamp {
            nonce: prefix.nonce,
            generation: prefix.generation,
        },
    ))
}

fn parse_header(
    id: &str,
    header: &Value,
    snapshot: &[u8],
    expires_ms: u64,
) -> Option<SuspendedCell> {
    let text = |v: &Value| v.as_str().map(str::to_owned);
    let scope = CellScope {
        agent_id: AgentId::new(text(&header["scope"]["agentId"])?),
        session_id: SessionId::new(text(&header["scope"]["sessionId"])?),
        run_id: RunId::new(text(&header["scope"]["runId"])?),
    };
    let pending = header["pending"]
        .as_array()?
        .iter()
        .map(|p| {
            Some(PendingNestedCall {
                host_call_id: p["hostCallId"].as_u64()?,
                call_id: text(&p["callId"])?,
                tool_id: text(&p["toolId"])?,
                args: p["args"].clone(),
                replay_safe: p["replaySafe"].as_bool()?,
                result: match p.get("result") {
                    None => None,
                    Some(r) => Some(match r.get("ok") {
                        Some(value) => Ok(value.clone()),
                        None => Err(NestedError {
                            message: text(&r["error"])?,
                            code: r["code"].as_str().map(str::to_owned),
                        }),
                    }),
                },
            })
        })
        .collect::<Option<Vec<_>>>()?;
    Some(SuspendedCell {
        id: CellId::new(id),
        scope,
        snapshot: snapshot.to_vec(),
        pending,
        expires_at: UNIX_EPOCH + Duration::from_millis(expires_ms),
        meta: header.get("meta").cloned().unwrap_or(Value::Null),
    })
}

/// Seals `cell` as a new record (a fresh nonce, generation 0) in the file
/// store's format, for stores that keep records elsewhere (a database):
/// [`decode_record`] opens it.
pub fn seal_record(key: &StoreKey, cell: &SuspendedCell) -> Result<Vec<u8>, CellError> {
    let stamp = Stamp {
        nonce: crate::key::random()?,
        generation: 0,
    };
    encode(key, cell, stamp)
}

/// Decodes a stored record (the file store's format; public for fuzzing).
/// Anything but an intact record sealed with `key` for `id` is
/// [`CellError::Tampered`], never a panic.
pub fn decode_record(key: &StoreKey, id: &str, bytes: &[u8]) -> Result<SuspendedCell, CellError> {
    open(key, id, bytes).map(|(cell, _)| cell)
}

/// `bytes` with a valid MAC for `id` in place of whatever was there (when
/// it is long enough to have one), so a fuzzer reaches the parser behind
/// the MAC check. Not for anything but fuzzing.
#[doc(hidden)]
pub fn reseal_record(key: &StoreKey, id: &str, bytes: &[u8]) -> Vec<u8> {
    let mut out = bytes.to_vec();
    let Some(prefix) = Prefix::parse(bytes) else {
        return out;
    };
    let header_end = HEAD_LEN.saturating_add(prefix.header_len as usize);
    if bytes.len() < header_end {
        return out;
    }
    let tag = record_mac(
        key,
        id,
        &bytes[..PREFIX_LEN],
        &bytes[HEAD_LEN..header_end],
        &bytes[header_end..],
    )
    .finalize()
    .into_bytes();
    out[PREFIX_LEN..HEAD_LEN].copy_from_slice(&tag);
    out
}

/// What became of the record with a given nonce.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum MarkState {
    /// Stored, at this generation or later.
    Live(u64),
    /// Taken or deleted: never to run again.
    Consumed,
}

/// A verified marker.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct Marker {
    pub id: String,
    pub state: MarkState,
    pub expires_ms: u64,
}

/// The file name of the marker for `nonce`.
pub(crate) fn marker_name(nonce: &[u8; 16]) -> String {
    format!("{}.mark", hex::encode(nonce))
}

/// The nonce a marker file name stands for.
pub(crate) fn marker_nonce(name: &str) -> Option<[u8; 16]> {
    let mut nonce = [0; 16];
    hex::decode_to_slice(name.strip_suffix(".mark")?, &mut nonce).ok()?;
    Some(nonce)
}

fn marker_mac(key: &StoreKey, nonce: &[u8; 16], body: &[u8]) -> Hmac<Sha256> {
    let mut mac = key.mac(MARKER_LABEL);
    mac.update(nonce);
    mac.update(body);
    mac
}

/// Encodes and seals a marker.
pub(crate) fn encode_marker(key: &StoreKey, nonce: &[u8; 16], marker: &Marker) -> Vec<u8> {
    let (state, generation) = match marker.state {
        MarkState::Live(generation) => (0u8, generation),
        MarkState::Consumed => (1u8, 0),
    };
    let id = marker.id.as_bytes();
    let mut out = Vec::with_capacity(MARKER_FIXED + id.len() + MAC_LEN);
    out.extend_from_slice(MARKER_MAGIC);
    out.extend_from_slice(&[1, state, id.len().min(255) as u8, 0]);
    out.extend_from_slice(&generation.to_le_bytes());
    out.extend_from_slice(&marker.expires_ms.to_le_bytes());
    out.extend_from_slice(&id[..id.len().min(255)]);
    let tag = marker_mac(key, nonce, &out).finalize().into_bytes();
    out.extend_from_slice(&tag);
    out
}

/// Checks and decodes a marker stored under `nonce`'s name.
pub(crate) fn decode_marker(key: &StoreKey, nonce: &[u8; 16], bytes: &[u8]) -> Option<Marker> {
    if bytes.len() < MARKER_FIXED + MAC_LEN || &bytes[..4] != MARKER_MAGIC || bytes[4] != 1 {
        return None;
    }
    let body_len = MARKER_FIXED + bytes[6] as usize;
    if bytes.len() != body_len + MAC_LEN {
        return None;
    }
    marker_mac(key, nonce, &bytes[..body_len])
        .verify_slice(&bytes[body_len..])
        .ok()?;
    let state = match bytes[5] {
        0 => MarkState::Live(le64(&bytes[8..16])),
        1 => MarkState::Consumed,
        _ => return None,
    };
    Some(Marker {
        id: String::from_utf8(bytes[MARKER_FIXED..body_len].to_vec()).ok()?,
        state,
        expires_ms: le64(&bytes[16..24]),
    })
}
