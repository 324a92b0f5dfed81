//! The hand-written shim of exactly the six WASI functions the module
//! imports: output to the VM's bounded buffer (fds 1 and 2 only), the host's
//! clock, the host's CSPRNG; no files, no environment, no arguments.

use std::time::{SystemTime, UNIX_EPOCH};

use rand_core::RngCore;
use wasmtime::{Caller, Linker};

use crate::config::Clock;
use crate::host::HostState;

/// WASI errno values used by the shim.
const ERRNO_SUCCESS: i32 = 0;
const ERRNO_BADF: i32 = 8;
const ERRNO_FAULT: i32 = 21;
const ERRNO_INVAL: i32 = 28;
const ERRNO_SPIPE: i32 = 70;

pub(crate) fn define(linker: &mut Linker<HostState>) -> wasmtime::Result<()> {
    const WASI: &str = "wasi_snapshot_preview1";
    linker.func_wrap(
        WASI,
        "clock_time_get",
        |mut caller: Caller<'_, HostState>, id: i32, _precision: i64, out: i32| -> i32 {
            let state = caller.data();
            let nanos: u64 = match (id, state.clock) {
                (0, Clock::System) => SystemTime::now()
                    .duration_since(UNIX_EPOCH)
                    .map(|d| d.as_nanos() as u64)
                    .unwrap_or(0),
                (0, Clock::Fixed { unix_ms }) => unix_ms.saturating_mul(1_000_000),
                (1, Clock::System) => state.started.elapsed().as_nanos() as u64,
                (1, Clock::Fixed { .. }) => 0,
                _ => return ERRNO_INVAL,
            };
            write_guest(&mut caller, out, &nanos.to_le_bytes())
        },
    )?;
    linker.func_wrap(
        WASI,
        "fd_write",
        |mut caller: Caller<'_, HostState>,
         fd: i32,
         iovs: i32,
         iovs_len: i32,
         written: i32|
         -> i32 {
            if fd != 1 && fd != 2 {
                return ERRNO_BADF;
            }
            let Some(memory) = caller.data().exports.as_ref().map(|e| e.memory) else {
                return ERRNO_FAULT;
            };
            let data = memory.data(&caller);
            let mut text = Vec::new();
            for i in 0..iovs_len.clamp(0, 1024) as usize {
                let at = iovs as usize + i * 8;
                let (Some(ptr), Some(len)) = (le_u32(data, at), le_u32(data, at + 4)) else {
                    return ERRNO_FAULT;
                };
                let Some(bytes) = data.get(ptr as usize..ptr as usize + len as usize) else {
                    return ERRNO_FAULT;
                };
                text.extend_from_slice(bytes);
            }
            let total = text.len() as u32;
            let stream = if fd == 2 {
                talon_protocol::OutputStream::Stderr
            } else {
                talon_protocol::OutputStream::Stdout
            };
            // Past the cap the bytes are dropped; the guest is not told.
            let _ = caller
                .data_mut()
                .output
                .push(stream, &String::from_utf8_lossy(&text));
            write_guest(&mut caller, written, &total.to_le_bytes())
        },
    )?;
    linker.func_wrap(
        WASI,
        "fd_close",
        |_: Caller<'_, HostState>, _fd: i32| -> i32 { ERRNO_BADF },
    )?;
    linker.func_wrap(
        WASI,
        "fd_fdstat_get",
        |mut caller: Caller<'_, HostState>, fd: i32, out: i32| -> i32 {
            if !(0..=2).contains(&fd) {
                return ERRNO_BADF;
            }
            // filetype CHARACTER_DEVICE, no flags, rights fd_write only.
            let mut stat = [0u8; 24];
            stat[0] = 2;
            stat[8..16].copy_from_slice(&(1u64 << 6).to_le_bytes());
            write_guest(&mut caller, out, &stat)
        },
    )?;
    linker.func_wrap(
        WASI,
        "fd_seek",
        |_: Caller<'_, HostState>, _fd: i32, _off: i64, _whence: i32, _out: i32| -> i32 {
            ERRNO_SPIPE
        },
    )?;
    linker.func_wrap(
        WASI,
        "random_get",
        |mut caller: Caller<'_, HostState>, buf: i32, len: i32| -> i32 {
            let Some(memory) = caller.data().exports.as_ref().map(|e| e.memory) else {
                return ERRNO_FAULT;
            };
            let (data, state) = memory.data_and_store_mut(&mut caller);
            let Some(slot) = data.get_mut(
                buf as u32 as usize..(buf as u32 as usize).saturating_add(len as u32 as usize),
            ) else {
                return ERRNO_FAULT;
            };
            state.rng.fill_bytes(slot);
            ERRNO_SUCCESS
        },
    )?;
    Ok(())
}

fn le_u32(data: &[u8], at: usize) -> Option<u32> {
    data.get(at..at + 4)
        .and_then(|b| b.try_into().ok())
        .map(u32::from_le_bytes)
}

fn write_guest(caller: &mut Caller<'_, HostState>, ptr: i32, bytes: &[u8]) -> i32 {
    let Some(memory) = caller.data().exports.as_ref().map(|e| e.memory) else {
        return ERRNO_FAULT;
    };
    let data = memory.data_mut(caller);
    let start = ptr as u32 as usize;
    match data.get_mut(start..start + bytes.len()) {
        Some(slot) => {
            slot.copy_from_slice(bytes);
            ERRNO_SUCCESS
        }
        None => ERRNO_FAULT,
    }
}
