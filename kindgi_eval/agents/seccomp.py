"""The system-call filter a handler runs under, as the classic BPF program bubblewrap's `--seccomp FD` installs.
Pure: builds bytes.

It refuses (EPERM) the calls a grading function never needs and an escape would: anonymous memory files
(`memfd_create`, memory outside any file size limit), tracing other processes (`ptrace`, `process_vm_*`), mounting
and namespaces (`mount`, `umount2`, `pivot_root`, `unshare`, `setns`), the kernel keyring (`keyctl`, `add_key`, `request_key`), and kernel surfaces (`bpf`, `perf_event_open`,
`userfaultfd`, `kexec_load`, `init_module`, `finit_module`, `delete_module`, `reboot`, `swapon`, `swapoff`). `clone3`,
whose flags sit in memory a filter cannot read, answers ENOSYS instead, so that the C library falls back to `clone`,
whose flags it can. A call
made under another ABI than the machine's (x32, or 32-bit on a 64-bit kernel) kills the process, so the numbers
below cannot be stepped around. `clone` with a namespace flag is refused too (its flags are its first argument).
"""

from __future__ import annotations

import errno
import platform
import struct

DENIED = (
    "memfd_create",
    "ptrace",
    "process_vm_readv",
    "process_vm_writev",
    "mount",
    "umount2",
    "pivot_root",
    "unshare",
    "setns",
    "clone3",
    "keyctl",
    "add_key",
    "request_key",
    "bpf",
    "perf_event_open",
    "userfaultfd",
    "kexec_load",
    "init_module",
    "finit_module",
    "delete_module",
    "reboot",
    "swapon",
    "swapoff",
)
"""The system calls refused: with EPERM, but `clone3` with ENOSYS (see above)."""

_NUMBERS = {
    "x86_64": {
        "memfd_create": 319,
        "ptrace": 101,
        "process_vm_readv": 310,
        "process_vm_writev": 311,
        "mount": 165,
        "umount2": 166,
        "pivot_root": 155,
        "unshare": 272,
        "setns": 308,
        "clone3": 435,
        "keyctl": 250,
        "add_key": 248,
        "request_key": 249,
        "bpf": 321,
        "perf_event_open": 298,
        "userfaultfd": 323,
        "kexec_load": 246,
        "init_module": 175,
        "finit_module": 313,
        "delete_module": 176,
        "reboot": 169,
        "swapon": 167,
        "swapoff": 168,
        "clone": 56,
    },
    "aarch64": {
        "memfd_create": 279,
        "ptrace": 117,
        "process_vm_readv": 270,
        "process_vm_writev": 271,
        "mount": 40,
        "umount2": 39,
        "pivot_root": 41,
        "unshare": 97,
        "setns": 268,
        "clone3": 435,
        "keyctl": 219,
        "add_key": 217,
        "request_key": 218,
        "bpf": 280,
        "perf_event_open": 241,
        "userfaultfd": 282,
        "kexec_load": 104,
        "init_module": 105,
        "finit_module": 273,
        "delete_module": 106,
        "reboot": 142,
        "swapon": 224,
        "swapoff": 225,
        "clone": 220,
    },
}
_ARCH = {"x86_64": 0xC000003E, "aarch64": 0xC00000B7}
"""AUDIT_ARCH_X86_64 and AUDIT_ARCH_AARCH64: the `arch` a system call under the machine's own ABI carries."""
X32_BIT = 0x40000000
"""Set in the number of an x32 system call on x86_64."""
NAMESPACE_FLAGS = 0x7E020000
"""CLONE_NEWNS | CLONE_NEWCGROUP | CLONE_NEWUTS | CLONE_NEWIPC | CLONE_NEWUSER | CLONE_NEWPID | CLONE_NEWNET."""

# classic BPF, as <linux/filter.h> and <linux/seccomp.h> define it
_LD_W_ABS, _JEQ_K, _JGE_K, _JSET_K, _RET_K = 0x20, 0x15, 0x35, 0x45, 0x06
_RET_ALLOW, _RET_KILL_PROCESS, _RET_ERRNO = 0x7FFF0000, 0x80000000, 0x00050000
_NR, _ARCH_AT, _ARG0_LOW = 0, 4, 16
"""Offsets in `struct seccomp_data`: the call's number, its arch, and the low 32 bits of its first argument."""


def machine() -> str | None:
    """The machine this filter can be built for, or None (then no custom suite runs here)."""
    name = platform.machine()
    return name if name in _NUMBERS else None


def syscall_number(arch: str, name: str) -> int:
    """The number of system call `name` on `arch`, as the filter knows it."""
    return _NUMBERS[arch][name]


def filter_program(arch: str) -> bytes:
    """The filter for `arch` (a `machine()` name), as the bytes of `struct sock_filter[]` bubblewrap reads."""
    numbers = _NUMBERS[arch]
    denied = [numbers[name] for name in DENIED]
    program: list[tuple[int, int, int, int]] = [
        (_LD_W_ABS, 0, 0, _ARCH_AT),
        (_JEQ_K, 1, 0, _ARCH[arch]),
        (_RET_K, 0, 0, _RET_KILL_PROCESS),
        (_LD_W_ABS, 0, 0, _NR),
    ]
    if arch == "x86_64":
        program += [(_JGE_K, 0, 1, X32_BIT), (_RET_K, 0, 0, _RET_KILL_PROCESS)]
    refuse = _RET_ERRNO | errno.EPERM
    for number in denied:
        # clone3 says ENOSYS, as a kernel without it would, so the C library falls back to clone, whose flags are read
        said = _RET_ERRNO | errno.ENOSYS if number == numbers["clone3"] else refuse
        program += [(_JEQ_K, 0, 1, number), (_RET_K, 0, 0, said)]
    # clone(flags, ...) with a namespace flag: refused like unshare
    program += [
        (_JEQ_K, 0, 3, numbers["clone"]),
        (_LD_W_ABS, 0, 0, _ARG0_LOW),
        (_JSET_K, 0, 1, NAMESPACE_FLAGS),
        (_RET_K, 0, 0, refuse),
        (_RET_K, 0, 0, _RET_ALLOW),
    ]
    return b"".join(struct.pack("=HBBI", code, jt, jf, k) for code, jt, jf, k in program)
