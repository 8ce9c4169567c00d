"""The handler's system-call filter as a program: run here by a small classic-BPF interpreter written from
<linux/filter.h>, so every decision it makes is checked without a kernel."""

from __future__ import annotations

import errno
import struct

import pytest

from kindgi_eval.agents.seccomp import DENIED, NAMESPACE_FLAGS, X32_BIT, filter_program, syscall_number

ALLOW, KILL, EPERM, ENOSYS = 0x7FFF0000, 0x80000000, 0x00050000 | errno.EPERM, 0x00050000 | errno.ENOSYS
ARCH = {"x86_64": 0xC000003E, "aarch64": 0xC00000B7}


def decide(program: bytes, nr: int, arch: int, arg0: int = 0) -> int:
    """What the filter returns for one call: `struct seccomp_data` is nr (u32), arch (u32), ip (u64), args (u64 x 6)."""
    data = struct.pack("=IIQ6Q", nr, arch, 0, arg0, 0, 0, 0, 0, 0)
    code = [struct.unpack_from("=HBBI", program, at) for at in range(0, len(program), 8)]
    pc, acc = 0, 0
    while True:
        op, jt, jf, k = code[pc]
        if op == 0x20:  # BPF_LD | BPF_W | BPF_ABS
            acc = struct.unpack_from("=I", data, k)[0]
        elif op == 0x06:  # BPF_RET | BPF_K
            return k
        elif op in (0x15, 0x35, 0x45):  # BPF_JMP | BPF_JEQ, BPF_JGE, BPF_JSET, against k
            taken = {0x15: acc == k, 0x35: acc >= k, 0x45: bool(acc & k)}[op]
            pc += jt if taken else jf
        else:
            raise AssertionError(f"unexpected instruction {op:#x}")
        pc += 1


@pytest.mark.parametrize("arch", ["x86_64", "aarch64"])
def test_each_denied_call_is_eperm_and_the_rest_allowed(arch: str) -> None:
    program = filter_program(arch)
    for name in DENIED:
        expected = ENOSYS if name == "clone3" else EPERM  # ENOSYS: the C library falls back to clone, which is read
        assert decide(program, syscall_number(arch, name), ARCH[arch]) == expected, name
    denied = {syscall_number(arch, name) for name in DENIED}
    for nr in range(0, 450):
        if nr not in denied and nr != syscall_number(arch, "clone"):
            assert decide(program, nr, ARCH[arch]) == ALLOW, nr


@pytest.mark.parametrize("arch", ["x86_64", "aarch64"])
def test_clone_with_a_namespace_flag_is_refused_and_a_plain_fork_allowed(arch: str) -> None:
    program, clone = filter_program(arch), syscall_number(arch, "clone")
    assert decide(program, clone, ARCH[arch], arg0=17) == ALLOW  # SIGCHLD: fork
    assert decide(program, clone, ARCH[arch], arg0=0x3D0F00) == ALLOW  # a thread's flags
    for flag in (0x10000000, 0x20000000, 0x40000000, 0x00020000, 0x04000000, 0x08000000, 0x02000000):
        assert flag & NAMESPACE_FLAGS
        assert decide(program, clone, ARCH[arch], arg0=17 | flag) == EPERM


def test_another_abi_is_killed_so_the_numbers_cannot_be_stepped_around() -> None:
    program = filter_program("x86_64")
    assert decide(program, 101, 0x40000003) == KILL  # a 32-bit call (AUDIT_ARCH_I386), whose 101 is not ptrace
    assert decide(program, X32_BIT | 319, ARCH["x86_64"]) == KILL  # memfd_create under the x32 ABI
