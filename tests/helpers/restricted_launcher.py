"""Runs toolgate's sandbox launcher on a machine that restricts user namespaces, simulated: a
seccomp filter (a real kernel refusal, inherited by the launcher and everything it starts)
makes the calls that machine would refuse fail with EPERM, then the launcher is executed in
place (same pid, so it is still toolgate's child).

Modes:
- ``no-capabilities``: as Ubuntu 24.04's AppArmor default
  (``kernel.apparmor_restrict_unprivileged_userns=1``): a user namespace can be created but
  gives no capabilities, so no other namespace can be made in it, and nothing can be mounted.
- ``no-user-namespaces``: user namespaces cannot be created at all (``max_user_namespaces=0``,
  or a kernel without them). Root still makes its other namespaces without one.
- ``no-mount-api``: namespaces work, but the new mount API (``open_tree``, ``fsopen``, …) is
  missing (``ENOSYS``), as under qemu-user or on a kernel before 5.2.

A test writes a small wrapper script (``#!python3``) that imports this module and calls
``run(mode, real_launcher, sys.argv[1:])``, and points ``TOOLGATE_SANDBOX_LAUNCHER`` at it (or
runs ``python3 restricted_launcher.py MODE LAUNCHER ARGS...``).
"""

import ctypes
import os
import platform
import struct
import sys

CLONE_NEWNS = 0x00020000
CLONE_NEWCGROUP = 0x02000000
CLONE_NEWUTS = 0x04000000
CLONE_NEWIPC = 0x08000000
CLONE_NEWUSER = 0x10000000
CLONE_NEWPID = 0x20000000
CLONE_NEWNET = 0x40000000
CLONE_NEWTIME = 0x00000080
OTHER_NAMESPACES = (CLONE_NEWNS | CLONE_NEWCGROUP | CLONE_NEWUTS | CLONE_NEWIPC | CLONE_NEWPID
                    | CLONE_NEWNET | CLONE_NEWTIME)

# (audit arch, system call numbers) per machine.
ARCHES = {
    'x86_64': (0xC000003E, dict(clone=56, unshare=272, setns=308, mount=165, umount2=166,
                                pivot_root=155)),
    'aarch64': (0xC00000B7, dict(clone=220, unshare=97, setns=268, mount=40, umount2=39,
                                 pivot_root=41)),
}
# The new mount API has the same numbers everywhere.
NEW_MOUNT_API = dict(open_tree=428, move_mount=429, fsopen=430, fsconfig=431, fsmount=432,
                     fspick=433, mount_setattr=442)
CLONE3 = 435

LD_W_ABS, JEQ, JSET, RET = 0x20, 0x15, 0x45, 0x06
ALLOW, ERRNO = 0x7FFF0000, 0x00050000
EPERM, ENOSYS = 1, 38


def program(mode):
    arch, numbers = ARCHES[platform.machine()]
    numbers = dict(numbers, **NEW_MOUNT_API)
    code = [(LD_W_ABS, 0, 0, 4), (JEQ, 1, 0, arch), (RET, 0, 0, ALLOW)]

    def refuse_if_flags(nr, mask):
        code.extend([(LD_W_ABS, 0, 0, 0), (JEQ, 0, 3, nr), (LD_W_ABS, 0, 0, 16),
                     (JSET, 0, 1, mask), (RET, 0, 0, ERRNO | EPERM)])

    def refuse(nr, errno=EPERM):
        code.extend([(LD_W_ABS, 0, 0, 0), (JEQ, 0, 1, nr), (RET, 0, 0, ERRNO | errno)])

    # clone3's flags are in memory a filter cannot read: refused, libc falls back to clone.
    refuse(CLONE3, ENOSYS)
    if mode == 'no-user-namespaces':
        for call in ('clone', 'unshare'):
            refuse_if_flags(numbers[call], CLONE_NEWUSER)
    elif mode == 'no-capabilities':
        for call in ('clone', 'unshare'):
            refuse_if_flags(numbers[call], OTHER_NAMESPACES)
        for call in ('setns', 'mount', 'umount2', 'pivot_root', *NEW_MOUNT_API):
            refuse(numbers[call])
    elif mode == 'no-mount-api':
        for call in NEW_MOUNT_API:
            refuse(numbers[call], ENOSYS)
    else:
        raise SystemExit(f'restricted_launcher: unknown mode {mode!r}')
    code.append((RET, 0, 0, ALLOW))
    return b''.join(struct.pack('HBBI', *instruction) for instruction in code), len(code)


def run(mode, launcher, args):
    filter_bytes, count = program(mode)
    buffer = ctypes.create_string_buffer(filter_bytes)

    class Program(ctypes.Structure):
        _fields_ = [('len', ctypes.c_ushort), ('filter', ctypes.c_void_p)]

    libc = ctypes.CDLL(None, use_errno=True)
    PR_SET_NO_NEW_PRIVS, PR_SET_SECCOMP, SECCOMP_MODE_FILTER = 38, 22, 2
    if libc.prctl(PR_SET_NO_NEW_PRIVS, 1, 0, 0, 0) != 0:
        raise OSError(ctypes.get_errno(), 'prctl(PR_SET_NO_NEW_PRIVS)')
    prog = Program(count, ctypes.addressof(buffer))
    if libc.prctl(PR_SET_SECCOMP, SECCOMP_MODE_FILTER, ctypes.byref(prog), 0, 0) != 0:
        raise OSError(ctypes.get_errno(), 'prctl(PR_SET_SECCOMP)')
    os.execv(launcher, [launcher, *args])


if __name__ == '__main__':
    run(sys.argv[1], sys.argv[2], sys.argv[3:])
