//! Bakes the base image into a new module, as wizer does: the image's
//! memory becomes the module's data segments and the stack pointer its
//! global's initial value. Instances of the baked module start as the image
//! with copy-on-write memory: creating a VM copies nothing.
//!
//! The rewriter understands exactly the sections it changes (memory,
//! global, data count, data) and copies every other section byte for byte.
//! Anything unexpected is an error, and the caller falls back to copying
//! the image into instances of the original module.

use crate::error::{Result, SandboxError};
use crate::image::WASM_PAGE;

const SECTION_GLOBAL: u8 = 6;
const SECTION_MEMORY: u8 = 5;
const SECTION_EXPORT: u8 = 7;
const SECTION_DATA_COUNT: u8 = 12;
const SECTION_DATA: u8 = 11;
const SECTION_IMPORT: u8 = 2;

/// Zero runs shorter than this are kept inside a segment rather than
/// splitting it (each segment costs a few bytes of header).
const MERGE_GAP: usize = 32;

fn bad(msg: &str) -> SandboxError {
    SandboxError::runtime(format!("baking the base image: {msg}"))
}

struct Reader<'a> {
    data: &'a [u8],
    at: usize,
}

impl<'a> Reader<'a> {
    fn byte(&mut self) -> Result<u8> {
        let b = *self
            .data
            .get(self.at)
            .ok_or_else(|| bad("truncated module"))?;
        self.at += 1;
        Ok(b)
    }

    fn uleb(&mut self) -> Result<u64> {
        let mut value = 0u64;
        for shift in (0..64).step_by(7) {
            let b = self.byte()?;
            value |= u64::from(b & 0x7f) << shift;
            if b & 0x80 == 0 {
                return Ok(value);
            }
        }
        Err(bad("LEB128 too long"))
    }

    fn take(&mut self, n: usize) -> Result<&'a [u8]> {
        let end = self
            .at
            .checked_add(n)
            .filter(|&e| e <= self.data.len())
            .ok_or_else(|| bad("truncated module"))?;
        let slice = &self.data[self.at..end];
        self.at = end;
        Ok(slice)
    }

    fn name(&mut self) -> Result<&'a [u8]> {
        let len = self.uleb()? as usize;
        self.take(len)
    }

    /// Skips a constant expression (`i32.const`, `i64.const`, `global.get`).
    fn const_expr(&mut self) -> Result<()> {
        match self.byte()? {
            0x41 | 0x42 | 0x23 => {
                self.uleb()?;
            }
            _ => return Err(bad("unsupported constant expression")),
        }
        if self.byte()? != 0x0b {
            return Err(bad("constant expression not terminated"));
        }
        Ok(())
    }
}

fn uleb(out: &mut Vec<u8>, mut value: u64) {
    loop {
        let b = (value & 0x7f) as u8;
        value >>= 7;
        if value == 0 {
            out.push(b);
            return;
        }
        out.push(b | 0x80);
    }
}

fn sleb(out: &mut Vec<u8>, mut value: i64) {
    loop {
        let b = (value & 0x7f) as u8;
        value >>= 7;
        let done = (value == 0 && b & 0x40 == 0) || (value == -1 && b & 0x40 != 0);
        out.push(if done { b } else { b | 0x80 });
        if done {
            return;
        }
    }
}

fn section(out: &mut Vec<u8>, id: u8, body: &[u8]) {
    out.push(id);
    uleb(out, body.len() as u64);
    out.extend_from_slice(body);
}

/// Returns `module` rewritten so that its instances start with `memory` as
/// linear memory and `stack_pointer` in the exported `__stack_pointer`.
pub(crate) fn bake(module: &[u8], memory: &[u8], stack_pointer: u32) -> Result<Vec<u8>> {
    if module.get(0..8) != Some(b"\0asm\x01\0\0\0".as_slice()) {
        return Err(bad("not a wasm module"));
    }
    if !memory.len().is_multiple_of(WASM_PAGE) {
        return Err(bad("memory is not whole pages"));
    }
    let mut sections = Vec::new();
    let mut r = Reader {
        data: module,
        at: 8,
    };
    while r.at < module.len() {
        let id = r.byte()?;
        let len = r.uleb()? as usize;
        sections.push((id, r.take(len)?));
    }
    let stack_global = stack_pointer_global(&sections)?;

    let mut out = module[..8].to_vec();
    let mut wrote_data = false;
    for &(id, body) in &sections {
        match id {
            SECTION_MEMORY => section(
                &mut out,
                id,
                &memory_section(body, memory.len() / WASM_PAGE)?,
            ),
            SECTION_GLOBAL => section(
                &mut out,
                id,
                &global_section(body, stack_global, stack_pointer)?,
            ),
            SECTION_DATA_COUNT => {
                let mut count = Vec::new();
                uleb(&mut count, segments(memory).len() as u64);
                section(&mut out, id, &count);
            }
            SECTION_DATA => {
                section(&mut out, id, &data_section(memory));
                wrote_data = true;
            }
            _ => section(&mut out, id, body),
        }
    }
    if !wrote_data {
        return Err(bad("module has no data section"));
    }
    Ok(out)
}

/// The index of the global exported as `__stack_pointer` (counting
/// imported globals, of which this module has none).
fn stack_pointer_global(sections: &[(u8, &[u8])]) -> Result<u32> {
    if let Some((_, body)) = sections.iter().find(|(id, _)| *id == SECTION_IMPORT) {
        let mut r = Reader { data: body, at: 0 };
        for _ in 0..r.uleb()? {
            r.name()?;
            r.name()?;
            if r.byte()? == 3 {
                return Err(bad("imported globals are not supported"));
            }
            // Only function imports remain possible here; skip the type index.
            r.uleb()?;
        }
    }
    let (_, body) = sections
        .iter()
        .find(|(id, _)| *id == SECTION_EXPORT)
        .ok_or_else(|| bad("no exports"))?;
    let mut r = Reader { data: body, at: 0 };
    for _ in 0..r.uleb()? {
        let name = r.name()?;
        let kind = r.byte()?;
        let index = r.uleb()? as u32;
        if name == b"__stack_pointer" && kind == 3 {
            return Ok(index);
        }
    }
    Err(bad("no exported __stack_pointer"))
}

fn memory_section(body: &[u8], pages: usize) -> Result<Vec<u8>> {
    let mut r = Reader { data: body, at: 0 };
    if r.uleb()? != 1 {
        return Err(bad("expected exactly one memory"));
    }
    let flags = r.byte()?;
    if flags & !1 != 0 {
        return Err(bad("unsupported memory flags"));
    }
    r.uleb()?;
    let max = if flags & 1 != 0 {
        Some(r.uleb()?)
    } else {
        None
    };
    if max.is_some_and(|max| (pages as u64) > max) {
        return Err(bad("image larger than the memory's maximum"));
    }
    let mut out = vec![1, flags];
    uleb(&mut out, pages as u64);
    if let Some(max) = max {
        uleb(&mut out, max);
    }
    Ok(out)
}

fn global_section(body: &[u8], target: u32, value: u32) -> Result<Vec<u8>> {
    let mut r = Reader { data: body, at: 0 };
    let count = r.uleb()?;
    let mut out = Vec::with_capacity(body.len());
    uleb(&mut out, count);
    for index in 0..count as u32 {
        let start = r.at;
        let ty = r.byte()?;
        let mutability = r.byte()?;
        if index == target {
            if ty != 0x7f {
                return Err(bad("__stack_pointer is not an i32"));
            }
            r.const_expr()?;
            out.extend_from_slice(&[ty, mutability, 0x41]);
            sleb(&mut out, i64::from(value as i32));
            out.push(0x0b);
        } else {
            r.const_expr()?;
            out.extend_from_slice(&body[start..r.at]);
        }
    }
    Ok(out)
}

/// Runs of non-zero bytes, merged across short zero gaps.
fn segments(memory: &[u8]) -> Vec<(usize, usize)> {
    let mut runs: Vec<(usize, usize)> = Vec::new();
    let mut i = 0;
    while i < memory.len() {
        if memory[i] == 0 {
            i += 1;
            continue;
        }
        let start = i;
        while i < memory.len() && memory[i] != 0 {
            i += 1;
        }
        match runs.last_mut() {
            Some(last) if start - last.1 < MERGE_GAP => last.1 = i,
            _ => runs.push((start, i)),
        }
    }
    runs
}

fn data_section(memory: &[u8]) -> Vec<u8> {
    let runs = segments(memory);
    let mut out = Vec::with_capacity(memory.len() / 2);
    uleb(&mut out, runs.len() as u64);
    for (start, end) in runs {
        out.push(0x00); // active, memory 0
        out.push(0x41);
        sleb(&mut out, i64::from(start as u32 as i32));
        out.push(0x0b);
        uleb(&mut out, (end - start) as u64);
        out.extend_from_slice(&memory[start..end]);
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn leb128_round_trips() {
        for value in [0u64, 1, 127, 128, 300, 65_536, u32::MAX as u64] {
            let mut out = Vec::new();
            uleb(&mut out, value);
            assert_eq!(Reader { data: &out, at: 0 }.uleb().unwrap(), value);
        }
        let mut out = Vec::new();
        sleb(&mut out, -1);
        assert_eq!(out, vec![0x7f]);
        let mut out = Vec::new();
        sleb(&mut out, 64);
        assert_eq!(out, vec![0xc0, 0x00]);
    }

    #[test]
    fn segments_merge_short_gaps() {
        let mut memory = vec![0u8; 256];
        memory[10] = 1;
        memory[20] = 2;
        memory[200] = 3;
        assert_eq!(segments(&memory), vec![(10, 21), (200, 201)]);
    }

    #[test]
    fn bad_modules_are_errors() {
        assert!(bake(b"not wasm", &[0; WASM_PAGE], 0).is_err());
        assert!(bake(b"\0asm\x01\0\0\0", &[0; 100], 0).is_err());
        assert!(bake(b"\0asm\x01\0\0\0\x05\x05", &[0; WASM_PAGE], 0).is_err());
    }
}
