//! The seccomp filter every sandboxed command runs under, compiled to BPF
//! by `seccompiler` (Firecracker's, kept by rust-vmm) and handed to
//! bubblewrap (`--add-seccomp-fd FD`, here or, as files a remote
//! host's script opens, there: `remote.rs`), which loads it last, just before it runs
//! the command: what bubblewrap itself needs to build the sandbox is done
//! by then.
//!
//! It refuses, with `EPERM`, what a build or a test never needs and what
//! reaches past the sandbox: tracing other processes and their memory,
//! mounting, namespaces (`unshare`, `setns`, `clone` with a namespace flag;
//! `clone3`, whose flags a filter cannot read, gets `ENOSYS` so that libc
//! falls back to `clone`), kernel modules, `bpf`, `perf_event_open`, the
//! kernel keyring, `io_uring` (whose operations bypass the filter),
//! handles to files by id, `userfaultfd`, swap, reboot, clocks, accounting,
//! `quotactl`, `syslog`, raw sockets and packet sockets. Any other
//! architecture's system calls (32-bit ones on x86_64) kill the process.

use std::collections::BTreeMap;

use seccompiler::{
    BpfProgram, SeccompAction, SeccompCmpArgLen, SeccompCmpOp, SeccompCondition, SeccompFilter,
    SeccompRule, TargetArch,
};

use crate::JailError;

/// System calls refused whatever their arguments.
const DENIED: &[i64] = &[
    libc::SYS_ptrace,
    libc::SYS_process_vm_readv,
    libc::SYS_process_vm_writev,
    libc::SYS_kcmp,
    libc::SYS_mount,
    libc::SYS_umount2,
    libc::SYS_pivot_root,
    libc::SYS_chroot,
    libc::SYS_open_tree,
    libc::SYS_move_mount,
    libc::SYS_fsopen,
    libc::SYS_fsconfig,
    libc::SYS_fsmount,
    libc::SYS_fspick,
    libc::SYS_mount_setattr,
    libc::SYS_unshare,
    libc::SYS_setns,
    libc::SYS_init_module,
    libc::SYS_finit_module,
    libc::SYS_delete_module,
    libc::SYS_kexec_load,
    libc::SYS_kexec_file_load,
    libc::SYS_bpf,
    libc::SYS_perf_event_open,
    libc::SYS_keyctl,
    libc::SYS_add_key,
    libc::SYS_request_key,
    libc::SYS_io_uring_setup,
    libc::SYS_io_uring_enter,
    libc::SYS_io_uring_register,
    libc::SYS_name_to_handle_at,
    libc::SYS_open_by_handle_at,
    libc::SYS_userfaultfd,
    libc::SYS_swapon,
    libc::SYS_swapoff,
    libc::SYS_reboot,
    libc::SYS_settimeofday,
    libc::SYS_clock_settime,
    libc::SYS_clock_adjtime,
    libc::SYS_adjtimex,
    libc::SYS_acct,
    libc::SYS_quotactl,
    libc::SYS_syslog,
    libc::SYS_fanotify_init,
    libc::SYS_vhangup,
    libc::SYS_pidfd_getfd,
    #[cfg(target_arch = "x86_64")]
    libc::SYS_iopl,
    #[cfg(target_arch = "x86_64")]
    libc::SYS_ioperm,
    #[cfg(target_arch = "x86_64")]
    libc::SYS_uselib,
];

/// The namespace flags `clone` may not carry.
const CLONE_NAMESPACES: [libc::c_int; 7] = [
    libc::CLONE_NEWUSER,
    libc::CLONE_NEWNS,
    libc::CLONE_NEWPID,
    libc::CLONE_NEWNET,
    libc::CLONE_NEWIPC,
    libc::CLONE_NEWUTS,
    libc::CLONE_NEWCGROUP,
];

fn arch() -> Result<TargetArch, JailError> {
    std::env::consts::ARCH.try_into().map_err(|_| {
        JailError::Unsupported(format!("no seccomp filter for {}", std::env::consts::ARCH))
    })
}

fn seccomp_error(e: impl std::fmt::Display) -> JailError {
    JailError::Seccomp(e.to_string())
}

/// A rule that holds when argument `arg`, masked, equals `value`.
fn masked(arg: u8, mask: u64, value: u64) -> Result<SeccompRule, JailError> {
    let condition = SeccompCondition::new(
        arg,
        SeccompCmpArgLen::Dword,
        SeccompCmpOp::MaskedEq(mask),
        value,
    )
    .map_err(seccomp_error)?;
    SeccompRule::new(vec![condition]).map_err(seccomp_error)
}

fn compile(map: BTreeMap<i64, Vec<SeccompRule>>, errno: i32) -> Result<BpfProgram, JailError> {
    SeccompFilter::new(
        map,
        SeccompAction::Allow,
        SeccompAction::Errno(errno as u32),
        arch()?,
    )
    .map_err(seccomp_error)?
    .try_into()
    .map_err(seccomp_error)
}

/// The filters, compiled for this machine's architecture: the refusals
/// (`EPERM`), and `clone3` answering `ENOSYS` (a second filter, since one
/// filter has one answer; the kernel applies both).
pub(crate) fn programs() -> Result<[BpfProgram; 2], JailError> {
    let mut map: BTreeMap<i64, Vec<SeccompRule>> =
        DENIED.iter().map(|&nr| (nr, Vec::new())).collect();
    // clone(flags, ...) with any namespace flag: one rule per flag.
    map.insert(
        libc::SYS_clone,
        CLONE_NAMESPACES
            .iter()
            .map(|&flag| masked(0, flag as u64, flag as u64))
            .collect::<Result<_, _>>()?,
    );
    // socket(AF_PACKET, ...) and socket(*, SOCK_RAW | flags, ...).
    map.insert(
        libc::SYS_socket,
        vec![
            masked(0, u64::from(u32::MAX), libc::AF_PACKET as u64)?,
            masked(1, 0xf, libc::SOCK_RAW as u64)?,
        ],
    );
    let refusals = compile(map, libc::EPERM)?;
    let clone3 = compile(
        BTreeMap::from([(libc::SYS_clone3, Vec::new())]),
        libc::ENOSYS,
    )?;
    Ok([refusals, clone3])
}

/// The program as the bytes bubblewrap reads (`struct sock_filter`s in
/// native byte order).
pub(crate) fn bytes(program: &BpfProgram) -> Vec<u8> {
    let mut out = Vec::with_capacity(program.len() * 8);
    for insn in program {
        out.extend_from_slice(&insn.code.to_ne_bytes());
        out.push(insn.jt);
        out.push(insn.jf);
        out.extend_from_slice(&insn.k.to_ne_bytes());
    }
    out
}
