//! The snapshot format: a VM's state between calls, as a versioned,
//! compressed, authenticated byte string.
//!
//! ```text
//! header (80 bytes, little-endian)
//!   0  magic "TLNS"        4  version u16     6  reserved u16
//!   8  base image id [32]  40 body length u32 44 raw body length u32
//!   48 HMAC-SHA256 of header[0..48] ++ body, keyed by the sandbox's
//!      snapshot key (so a snapshot that left trusted storage cannot be
//!      forged or altered)
//! body: LZ4 block-compressed (fast both ways; the body is mostly pages)
//!   memory size u32, stack pointer u32, runtime u32, context u32,
//!   scratch u32, strings u32, stack getter u32, cell promise u32 (0: none),
//!   next call id u64,
//!   resolver count u32, then (id u64, resolve u32, reject u32) each,
//!   pending-call JSON length u32 + bytes, settlement JSON length u32 +
//!   bytes,
//!   page count u32, page indices u32 each (ascending), then the pages
//! ```
//!
//! Pages are 4 KiB pages of linear memory that differ from the base image,
//! so a snapshot holds what the cell changed, not the whole heap. Decoding
//! checks sizes, checksum, base image and every pointer before anything is
//! written into an instance.

use std::collections::BTreeMap;

use hmac::{Hmac, Mac};
use sha2::Sha256;
use wasmtime::Store;

use crate::abi::Exports;
use crate::config::Limits;
use crate::error::{Result, SandboxError};
use crate::functions::{HostCallError, HostFunction, HostFunctions, PendingCall};
use crate::host::{GuestPointers, HostState, Resolvers, Settlement};
use crate::image::{BaseImage, PAGE, Registers, grow_to, read_registers, set_registers};

const MAGIC: &[u8; 4] = b"TLNS";
/// The format version this build writes and reads.
pub const SNAPSHOT_VERSION: u16 = 1;
const HEADER: usize = 80;

/// The key that authenticates snapshots.
pub(crate) type SnapshotKey = [u8; 32];

pub(crate) fn encode(
    store: &mut Store<HostState>,
    ex: &Exports,
    image: &BaseImage,
    key: &SnapshotKey,
    cell: u32,
) -> Result<Vec<u8>> {
    let registers = read_registers(store, ex)?;
    let state = store.data();
    let limits = state.limits;
    let memory = ex.memory.data(&*store);
    let mut body = Vec::with_capacity(64 * 1024);
    for word in [
        memory.len() as u32,
        registers.stack_pointer,
        registers.runtime,
        registers.context,
        registers.ptrs.scratch,
        registers.ptrs.strings,
        registers.ptrs.stack_getter,
        cell,
    ] {
        body.extend_from_slice(&word.to_le_bytes());
    }
    body.extend_from_slice(&state.next_call_id.to_le_bytes());
    body.extend_from_slice(&(state.resolvers.len() as u32).to_le_bytes());
    for (id, r) in &state.resolvers {
        body.extend_from_slice(&id.to_le_bytes());
        body.extend_from_slice(&r.resolve.to_le_bytes());
        body.extend_from_slice(&r.reject.to_le_bytes());
    }
    let pending: Vec<serde_json::Value> = state
        .pending
        .iter()
        .map(|c| serde_json::json!({"id": c.id, "name": c.name, "args": c.args}))
        .collect();
    let pending = serde_json::to_vec(&pending).map_err(|e| SandboxError::internal_failed("", e))?;
    body.extend_from_slice(&(pending.len() as u32).to_le_bytes());
    body.extend_from_slice(&pending);
    let settled: Vec<serde_json::Value> = state
        .settled
        .iter()
        .map(|s| match &s.result {
            Ok(value) => serde_json::json!({"id": s.id, "ok": value}),
            Err(e) => {
                serde_json::json!({"id": s.id, "error": {"message": e.message, "code": e.code}})
            }
        })
        .collect();
    let settled = serde_json::to_vec(&settled).map_err(|e| SandboxError::internal_failed("", e))?;
    body.extend_from_slice(&(settled.len() as u32).to_le_bytes());
    body.extend_from_slice(&settled);

    let zero = [0u8; PAGE];
    let pages: Vec<u32> = (0..memory.len() / PAGE)
        .filter(|&i| {
            let page = &memory[i * PAGE..(i + 1) * PAGE];
            page != image.memory.get(i * PAGE..(i + 1) * PAGE).unwrap_or(&zero)
        })
        .map(|i| i as u32)
        .collect();
    body.extend_from_slice(&(pages.len() as u32).to_le_bytes());
    for page in &pages {
        body.extend_from_slice(&page.to_le_bytes());
    }
    for &page in &pages {
        body.extend_from_slice(&memory[page as usize * PAGE..(page as usize + 1) * PAGE]);
    }

    let compressed = lz4_flex::block::compress(&body);
    let total = HEADER + compressed.len();
    if total > limits.max_snapshot_bytes {
        return Err(SandboxError::SnapshotTooLarge {
            size: total,
            limit: limits.max_snapshot_bytes,
        });
    }
    let mut out = Vec::with_capacity(total);
    out.extend_from_slice(MAGIC);
    out.extend_from_slice(&SNAPSHOT_VERSION.to_le_bytes());
    out.extend_from_slice(&0u16.to_le_bytes());
    out.extend_from_slice(&image.id);
    out.extend_from_slice(&(compressed.len() as u32).to_le_bytes());
    out.extend_from_slice(&(body.len() as u32).to_le_bytes());
    let digest = authenticate(key, &out, &compressed);
    out.extend_from_slice(&digest);
    out.extend_from_slice(&compressed);
    Ok(out)
}

fn mac(key: &SnapshotKey, header: &[u8], body: &[u8]) -> Hmac<Sha256> {
    // HMAC takes keys of any length, so a 32-byte key never fails.
    let mut mac = match <Hmac<Sha256> as Mac>::new_from_slice(key) {
        Ok(mac) => mac,
        Err(_) => unreachable!("HMAC accepts any key length"),
    };
    mac.update(header);
    mac.update(body);
    mac
}

fn authenticate(key: &SnapshotKey, header: &[u8], body: &[u8]) -> [u8; 32] {
    mac(key, header, body).finalize().into_bytes().into()
}

/// A checked snapshot, ready to be written into a fresh instance.
pub(crate) struct Decoded {
    memory_size: usize,
    registers: Registers,
    pub cell: u32,
    next_call_id: u64,
    resolvers: BTreeMap<u64, Resolvers>,
    pending: Vec<PendingCall>,
    settled: Vec<Settlement>,
    /// Page indices; their bytes sit in `body` from `pages_at` on.
    pages: Vec<u32>,
    pages_at: usize,
    body: Vec<u8>,
}

fn invalid(msg: impl Into<String>) -> SandboxError {
    SandboxError::SnapshotInvalid(msg.into())
}

pub(crate) fn decode(
    bytes: &[u8],
    image: &BaseImage,
    key: &SnapshotKey,
    limits: &Limits,
    functions: &HostFunctions,
) -> Result<Decoded> {
    if bytes.len() > limits.max_snapshot_bytes {
        return Err(SandboxError::SnapshotTooLarge {
            size: bytes.len(),
            limit: limits.max_snapshot_bytes,
        });
    }
    if bytes.len() < HEADER {
        return Err(invalid(format!(
            "truncated: {} bytes is shorter than the header",
            bytes.len()
        )));
    }
    if &bytes[0..4] != MAGIC {
        return Err(invalid("not a Talon snapshot (bad magic)"));
    }
    let version = u16::from_le_bytes([bytes[4], bytes[5]]);
    if version != SNAPSHOT_VERSION {
        return Err(invalid(format!(
            "version {version}, this build reads version {SNAPSHOT_VERSION}"
        )));
    }
    let body_len = le32(bytes, 40) as usize;
    let raw_len = le32(bytes, 44) as usize;
    if HEADER + body_len != bytes.len() {
        return Err(invalid(format!(
            "truncated or padded: header says {} bytes, got {}",
            HEADER + body_len,
            bytes.len()
        )));
    }
    if mac(key, &bytes[..48], &bytes[HEADER..])
        .verify_slice(&bytes[48..80])
        .is_err()
    {
        return Err(invalid(
            "authentication failed (corrupted, forged, or made with another key)",
        ));
    }
    if bytes[8..40] != image.id {
        return Err(invalid("made from another module or base image"));
    }
    let max_raw = limits.store_memory_bytes() + (1 << 20);
    if raw_len > max_raw {
        return Err(SandboxError::SnapshotTooLarge {
            size: raw_len,
            limit: max_raw,
        });
    }
    // The body is authenticated and its size bounded: decompress in one go.
    let body = lz4_flex::block::decompress(&bytes[HEADER..], raw_len)
        .map_err(|e| SandboxError::snapshot_rejected("body does not decompress", e))?;
    if body.len() != raw_len {
        return Err(invalid("body length differs from the header"));
    }
    let mut decoded = parse_body(&body, limits, functions)?;
    decoded.body = body;
    Ok(decoded)
}

fn parse_body(body: &[u8], limits: &Limits, functions: &HostFunctions) -> Result<Decoded> {
    let mut r = Reader { data: body, at: 0 };
    let memory_size = r.u32()? as usize;
    if !memory_size.is_multiple_of(crate::image::WASM_PAGE)
        || memory_size > limits.store_memory_bytes()
    {
        return Err(invalid(format!("memory size {memory_size} is not allowed")));
    }
    let in_memory = |p: u32, what: &str| -> Result<u32> {
        if (p as usize) < memory_size {
            Ok(p)
        } else {
            Err(invalid(format!("{what} pointer out of range")))
        }
    };
    let registers = Registers {
        stack_pointer: in_memory(r.u32()?, "stack")?,
        runtime: in_memory(r.u32()?, "runtime")?,
        context: in_memory(r.u32()?, "context")?,
        ptrs: GuestPointers {
            scratch: in_memory(r.u32()?, "scratch")?,
            strings: in_memory(r.u32()?, "strings")?,
            stack_getter: in_memory(r.u32()?, "stack getter")?,
        },
    };
    let cell = r.u32()?;
    if cell != 0 {
        in_memory(cell, "cell")?;
    }
    let next_call_id = r.u64()?;
    if next_call_id == 0 || next_call_id == u64::MAX {
        return Err(invalid("call id counter out of range"));
    }
    let count = r.u32()? as usize;
    if count > limits.max_pending_calls.max(128) {
        return Err(invalid(format!("{count} pending resolvers")));
    }
    let mut resolvers = BTreeMap::new();
    for _ in 0..count {
        let id = r.u64()?;
        if id >= next_call_id {
            return Err(invalid("resolver id from the future"));
        }
        let resolve = in_memory(r.u32()?, "resolver")?;
        let reject = in_memory(r.u32()?, "resolver")?;
        resolvers.insert(id, Resolvers { resolve, reject });
    }
    let pending_len = r.u32()? as usize;
    let pending_json: Vec<serde_json::Value> = serde_json::from_slice(r.take(pending_len)?)
        .map_err(|e| SandboxError::snapshot_rejected("pending calls", e))?;
    let mut pending = Vec::with_capacity(pending_json.len());
    for call in pending_json {
        let (Some(id), Some(name), Some(args)) = (
            call["id"].as_u64(),
            call["name"].as_str(),
            call["args"].as_array(),
        ) else {
            return Err(invalid("malformed pending call"));
        };
        if !resolvers.contains_key(&id) {
            return Err(invalid(format!("pending call {id} has no resolver")));
        }
        if !matches!(functions.get(name), Some(HostFunction::Async)) {
            return Err(invalid(format!(
                "pending call to '{name}', which is not a registered async host function"
            )));
        }
        pending.push(PendingCall {
            id,
            name: name.to_owned(),
            args: args.clone(),
        });
    }
    let settled_len = r.u32()? as usize;
    let settled_json: Vec<serde_json::Value> = serde_json::from_slice(r.take(settled_len)?)
        .map_err(|e| SandboxError::snapshot_rejected("settlements", e))?;
    let mut settled = Vec::with_capacity(settled_json.len());
    for entry in settled_json {
        let Some(id) = entry["id"].as_u64().filter(|id| resolvers.contains_key(id)) else {
            return Err(invalid("settlement for an unknown call"));
        };
        let result = match (entry.get("ok"), entry.get("error")) {
            (Some(value), None) => Ok(value.clone()),
            (None, Some(error)) => Err(HostCallError {
                message: error["message"].as_str().unwrap_or_default().to_owned(),
                code: error["code"].as_str().map(str::to_owned),
            }),
            _ => return Err(invalid("malformed settlement")),
        };
        settled.push(Settlement { id, result });
    }
    let page_count = r.u32()? as usize;
    if page_count > memory_size / PAGE {
        return Err(invalid("more pages than memory"));
    }
    let mut indices = Vec::with_capacity(page_count);
    for _ in 0..page_count {
        let index = r.u32()?;
        if (index as usize + 1) * PAGE > memory_size
            || indices.last().is_some_and(|&last| index <= last)
        {
            return Err(invalid("page index out of order or out of range"));
        }
        indices.push(index);
    }
    let pages_at = r.at;
    r.take(page_count * PAGE)?;
    if r.at != body.len() {
        return Err(invalid("trailing bytes after the pages"));
    }
    Ok(Decoded {
        memory_size,
        registers,
        cell,
        next_call_id,
        resolvers,
        pending,
        settled,
        pages: indices,
        pages_at,
        body: Vec::new(),
    })
}

impl Decoded {
    /// Writes the snapshot over an instance that already holds the base
    /// image.
    pub fn apply(self, store: &mut Store<HostState>, ex: &Exports) -> Result<()> {
        grow_to(store, ex, self.memory_size)?;
        let data = ex.memory.data_mut(&mut *store);
        if data.len() != self.memory_size {
            // Memory never shrinks: a snapshot smaller than the image is forged.
            return Err(invalid("memory size smaller than the base image"));
        }
        let bytes = self.body.get(self.pages_at..).unwrap_or_default();
        for (index, page) in self.pages.iter().zip(bytes.chunks_exact(PAGE)) {
            let at = *index as usize * PAGE;
            data[at..at + PAGE].copy_from_slice(page);
        }
        set_registers(store, ex, &self.registers)?;
        let state = store.data_mut();
        state.next_call_id = self.next_call_id;
        state.resolvers = self.resolvers;
        state.pending = self.pending;
        state.settled = self.settled;
        Ok(())
    }
}

fn le32(bytes: &[u8], at: usize) -> u32 {
    u32::from_le_bytes([bytes[at], bytes[at + 1], bytes[at + 2], bytes[at + 3]])
}

struct Reader<'a> {
    data: &'a [u8],
    at: usize,
}

impl<'a> Reader<'a> {
    fn take(&mut self, n: usize) -> Result<&'a [u8]> {
        let end = self
            .at
            .checked_add(n)
            .filter(|&e| e <= self.data.len())
            .ok_or_else(|| invalid("body truncated"))?;
        let slice = &self.data[self.at..end];
        self.at = end;
        Ok(slice)
    }

    fn u32(&mut self) -> Result<u32> {
        let b = self.take(4)?;
        Ok(u32::from_le_bytes([b[0], b[1], b[2], b[3]]))
    }

    fn u64(&mut self) -> Result<u64> {
        let b = self.take(8)?;
        let mut a = [0u8; 8];
        a.copy_from_slice(b);
        Ok(u64::from_le_bytes(a))
    }
}
