//! What a call's init does to its own process before it waits for its call, besides the
//! view: the loopback interface of a new network namespace, the egress proxy's listener in
//! it, and giving up every capability (an init holds them in the server's user namespace; the
//! program gets none, also as root).

use std::io;
use std::os::fd::{FromRawFd, OwnedFd};

/// `struct __user_cap_header_struct` and `__user_cap_data_struct` (linux/capability.h).
#[repr(C)]
struct CapHeader {
    version: u32,
    pid: libc::c_int,
}

#[repr(C)]
#[derive(Clone, Copy)]
struct CapData {
    effective: u32,
    permitted: u32,
    inheritable: u32,
}

const CAPABILITY_VERSION_3: u32 = 0x2008_0522;
/// `SECBIT_NOROOT | SECBIT_NOROOT_LOCKED | SECBIT_NO_SETUID_FIXUP |
/// SECBIT_NO_SETUID_FIXUP_LOCKED | SECBIT_KEEP_CAPS_LOCKED | SECBIT_NO_CAP_AMBIENT_RAISE |
/// SECBIT_NO_CAP_AMBIENT_RAISE_LOCKED`: root gains nothing by executing a program.
const LOCKED_SECUREBITS: libc::c_ulong = 0x01 | 0x02 | 0x04 | 0x08 | 0x20 | 0x40 | 0x80;

/// Brings up `lo` in this (new) network namespace.
pub(crate) fn loopback_up() -> io::Result<()> {
    // SAFETY: socket returns a new fd or -1; ioctl reads and writes the ifreq we own; the fd is
    // closed before returning.
    unsafe {
        let socket = libc::socket(libc::AF_INET, libc::SOCK_DGRAM | libc::SOCK_CLOEXEC, 0);
        if socket < 0 {
            return Err(io::Error::last_os_error());
        }
        let mut request: libc::ifreq = std::mem::zeroed();
        for (slot, byte) in request.ifr_name.iter_mut().zip(b"lo\0") {
            *slot = *byte as libc::c_char;
        }
        request.ifr_ifru.ifru_flags =
            (libc::IFF_UP | libc::IFF_LOOPBACK | libc::IFF_RUNNING) as i16;
        // The request's type is `c_ulong` for glibc and `c_int` for musl.
        let done = libc::ioctl(socket, libc::SIOCSIFFLAGS as _, &request);
        let err = io::Error::last_os_error();
        libc::close(socket);
        if done != 0 {
            return Err(err);
        }
    }
    Ok(())
}

/// A TCP socket listening on `127.0.0.1:port` (close-on-exec), made in this process's
/// network namespace: toolgate's egress proxy accepts the program's connections on it.
pub(crate) fn proxy_listener(port: u16) -> io::Result<OwnedFd> {
    // SAFETY: socket returns a new fd or -1 (owned right away); setsockopt, bind and listen
    // read the values we own.
    unsafe {
        let fd = libc::socket(libc::AF_INET, libc::SOCK_STREAM | libc::SOCK_CLOEXEC, 0);
        if fd < 0 {
            return Err(io::Error::last_os_error());
        }
        let socket = OwnedFd::from_raw_fd(fd);
        let one: libc::c_int = 1;
        libc::setsockopt(
            fd,
            libc::SOL_SOCKET,
            libc::SO_REUSEADDR,
            (&one as *const libc::c_int).cast(),
            std::mem::size_of::<libc::c_int>() as libc::socklen_t,
        );
        let address = libc::sockaddr_in {
            sin_family: libc::AF_INET as libc::sa_family_t,
            sin_port: port.to_be(),
            sin_addr: libc::in_addr {
                s_addr: u32::from(std::net::Ipv4Addr::LOCALHOST).to_be(),
            },
            sin_zero: [0; 8],
        };
        if libc::bind(
            fd,
            (&address as *const libc::sockaddr_in).cast(),
            std::mem::size_of::<libc::sockaddr_in>() as libc::socklen_t,
        ) != 0
            || libc::listen(fd, 128) != 0
        {
            return Err(io::Error::last_os_error());
        }
        Ok(socket)
    }
}

/// Gives up every capability for good: the bounding and ambient sets emptied, the securebits
/// that make root's `execve` grant nothing locked, and the process's own sets cleared. (A
/// process without `CAP_SETPCAP` has nothing to drop but its own sets, which always works.)
pub(crate) fn drop_capabilities() -> io::Result<()> {
    // SAFETY: prctl and capset take integers and the structs we own.
    unsafe {
        // One call per capability: EINVAL past the last one this kernel knows; EPERM for
        // every one without CAP_SETPCAP (nothing can be dropped then).
        for cap in 0..64 {
            if libc::prctl(libc::PR_CAPBSET_DROP, cap, 0, 0, 0) != 0 {
                break;
            }
        }
        libc::prctl(
            libc::PR_CAP_AMBIENT,
            libc::PR_CAP_AMBIENT_CLEAR_ALL,
            0,
            0,
            0,
        );
        libc::prctl(libc::PR_SET_SECUREBITS, LOCKED_SECUREBITS, 0, 0, 0);
        let mut header = CapHeader {
            version: CAPABILITY_VERSION_3,
            pid: 0,
        };
        let data = [CapData {
            effective: 0,
            permitted: 0,
            inheritable: 0,
        }; 2];
        if libc::syscall(
            libc::SYS_capset,
            &mut header as *mut CapHeader,
            data.as_ptr(),
        ) != 0
        {
            return Err(io::Error::last_os_error());
        }
    }
    Ok(())
}
