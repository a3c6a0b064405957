//! Inits offered to toolgate ahead of its calls: the launcher server hands toolgate a waiting
//! init, set up for one kind of call (see [`CallKind`]), and toolgate sends its next call of that
//! kind straight to it, so that no hop through the server is on the call's path.
//!
//! A view is only as fresh as the checks made before its call. On the server's path the server
//! makes them at each request; for an offered init toolgate makes the same ones itself, right
//! before it sends the call ([`Offer::still_fresh`]):
//!
//! - the server's inotify queue (a descriptor of it comes with each offer) is empty: no name a
//!   view was built from changed without the server having seen it;
//! - the server's [`Epoch`] is the offer's: the server raises it *before* it reads queued events,
//!   so events it read after making the offer (they may have made its view stale) show as a
//!   newer epoch, and events not read yet show in the queue;
//! - each protected or hidden path of the view is still the file it was ([`file_identity`]).
//!
//! An offer that fails one is closed (its init sees the end of file and exits) and the call goes
//! through the server, which rebuilds what is stale. The server never kills an offered init
//! itself (toolgate may be sending it a call at that moment); it ends when toolgate closes it,
//! after its call, or with the server.

use std::ffi::{OsStr, OsString};
use std::io;
use std::os::fd::{AsFd, BorrowedFd, OwnedFd};
use std::os::unix::fs::MetadataExt;
use std::ptr::NonNull;
use std::sync::atomic::{AtomicU64, Ordering};

use super::kind::CallKind;
use super::wire::{self, Reader};
use super::words;

impl CallKind {
    /// `OFFERED` + the kind, for the init (which checks its call against it).
    pub fn offered_message(&self) -> Vec<u8> {
        let mut bytes = vec![wire::OFFERED];
        bytes.extend_from_slice(&words::join(self.to_words()));
        bytes
    }

    /// The kind of an `OFFERED` message's rest.
    pub fn of_offered(rest: &[u8]) -> Self {
        Self::from_words(words::split(rest))
    }
}

/// `(dev, inode)` of `path` without following a last symlink; `None` when it is missing.
pub fn file_identity(path: &OsStr) -> Option<(u64, u64)> {
    std::fs::symlink_metadata(path)
        .ok()
        .map(|meta| (meta.dev(), meta.ino()))
}

/// A protected or hidden path of a view and what it was when the view was built.
pub type Guarded = (OsString, Option<(u64, u64)>);

/// An init offered to toolgate (the fixed part of an `OFFER` message and its body).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Offer {
    /// The policy id it serves.
    pub policy: u64,
    /// The server's epoch when it was offered.
    pub epoch: u64,
    /// The init's pid (the call's process group).
    pub pid: libc::pid_t,
    pub kind: CallKind,
    /// Its view's protected and hidden paths, as they were when the view was built.
    pub guarded: Vec<Guarded>,
}

/// Where the flags byte of an `OFFER` is: after the tag, the policy, the epoch and the pid.
const OFFER_FLAGS_AT: usize = 21;

impl Offer {
    /// Sends it on toolgate's socket with its descriptors: the call's socket (the init has the
    /// other end), the init's pidfd, the epoch's memfd and the inotify descriptor. Does not
    /// wait: a full socket fails (`WouldBlock`) rather than stalling the server.
    pub fn send(
        &self,
        socket: BorrowedFd<'_>,
        call: BorrowedFd<'_>,
        pidfd: BorrowedFd<'_>,
        epoch: &Epoch,
        events: BorrowedFd<'_>,
    ) -> io::Result<()> {
        let mut head = Vec::with_capacity(OFFER_FLAGS_AT + 1);
        head.push(wire::OFFER);
        head.extend_from_slice(&self.policy.to_le_bytes());
        head.extend_from_slice(&self.epoch.to_le_bytes());
        head.extend_from_slice(&self.pid.to_le_bytes());
        head.push(0);
        let kind = self.kind.to_words();
        let mut body = vec![OsString::from(kind.len().to_string())];
        body.extend(kind);
        for (path, identity) in &self.guarded {
            body.push(path.clone());
            body.push(match identity {
                Some((dev, ino)) => format!("{dev}:{ino}").into(),
                None => "-".into(),
            });
        }
        let fds = [call, pidfd, epoch.fd(), events];
        wire::send_with_body_nowait(socket, head, OFFER_FLAGS_AT, &words::join(body), &fds)
    }

    /// An `OFFER` message received (its tag read by the caller from `rest`'s start), with its
    /// descriptors; `None` when it is malformed.
    pub fn receive(bytes: &[u8], mut fds: Vec<OwnedFd>) -> Option<Received> {
        let mut reader = Reader::new(bytes);
        if reader.u8()? != wire::OFFER {
            return None;
        }
        let (policy, epoch, pid, flags) =
            (reader.u64()?, reader.u64()?, reader.i32()?, reader.u8()?);
        let body = wire::take_body(reader.rest(), flags, &mut fds).ok()?;
        let mut words = words::split(&body).into_iter();
        let count: usize = words.next()?.to_str()?.parse().ok()?;
        let kind = CallKind::from_words(words.by_ref().take(count).collect());
        let mut guarded = Vec::new();
        while let Some(path) = words.next() {
            let identity = words.next()?;
            let identity = match identity.to_str()? {
                "-" => None,
                text => {
                    let (dev, ino) = text.split_once(':')?;
                    Some((dev.parse().ok()?, ino.parse().ok()?))
                }
            };
            guarded.push((path, identity));
        }
        let mut fds = fds.into_iter();
        let (Some(socket), Some(pidfd), Some(epoch_fd), Some(events), None) =
            (fds.next(), fds.next(), fds.next(), fds.next(), fds.next())
        else {
            return None;
        };
        Some(Received {
            offer: Offer {
                policy,
                epoch,
                pid,
                kind,
                guarded,
            },
            socket,
            pidfd,
            epoch: epoch_fd,
            events,
        })
    }

    /// Whether the view of the offered init is as fresh as the server would make sure of before
    /// a call of its own (see the module's description); the order of the first two checks
    /// matters.
    pub fn still_fresh(&self, events: BorrowedFd<'_>, epoch: &Epoch) -> bool {
        !wire::ready(events)
            && epoch.get() == self.epoch
            && self
                .guarded
                .iter()
                .all(|(path, identity)| file_identity(path) == *identity)
    }
}

/// An `OFFER` as received: the offer, the call's socket, the init's pidfd, and the server's
/// epoch memfd and inotify descriptor.
#[derive(Debug)]
pub struct Received {
    pub offer: Offer,
    pub socket: OwnedFd,
    pub pidfd: OwnedFd,
    pub epoch: OwnedFd,
    pub events: OwnedFd,
}

/// A counter in a memfd the server and toolgate both map: the server raises it before it reads
/// inotify events; toolgate compares it with an offer's.
#[derive(Debug)]
pub struct Epoch {
    fd: OwnedFd,
    counter: NonNull<AtomicU64>,
    writable: bool,
}

// SAFETY: the mapping is only ever accessed through the atomic, which is Sync.
unsafe impl Send for Epoch {}
// SAFETY: as above.
unsafe impl Sync for Epoch {}

impl Epoch {
    /// A new counter at 1 (the server's).
    pub fn create() -> io::Result<Self> {
        let fd = rustix::fs::memfd_create(c"toolgate-epoch", rustix::fs::MemfdFlags::CLOEXEC)?;
        rustix::fs::ftruncate(&fd, std::mem::size_of::<AtomicU64>() as u64)?;
        let epoch = Self::map(fd, true)?;
        epoch.raise();
        Ok(epoch)
    }

    /// The server's counter from its memfd, read-only (toolgate's).
    pub fn open(fd: OwnedFd) -> io::Result<Self> {
        let size = rustix::fs::fstat(&fd)?.st_size;
        if size < std::mem::size_of::<AtomicU64>() as i64 {
            return Err(io::Error::other("the epoch memfd is too small"));
        }
        Self::map(fd, false)
    }

    fn map(fd: OwnedFd, writable: bool) -> io::Result<Self> {
        let protection = if writable {
            libc::PROT_READ | libc::PROT_WRITE
        } else {
            libc::PROT_READ
        };
        // SAFETY: a new shared mapping of the memfd's first page; nothing else is mapped there.
        let address = unsafe {
            libc::mmap(
                std::ptr::null_mut(),
                std::mem::size_of::<AtomicU64>(),
                protection,
                libc::MAP_SHARED,
                std::os::fd::AsRawFd::as_raw_fd(&fd),
                0,
            )
        };
        if address == libc::MAP_FAILED {
            return Err(io::Error::last_os_error());
        }
        let counter = NonNull::new(address.cast::<AtomicU64>())
            .ok_or_else(|| io::Error::other("mmap returned null"))?;
        Ok(Self {
            fd,
            counter,
            writable,
        })
    }

    /// The memfd, to send.
    pub fn fd(&self) -> BorrowedFd<'_> {
        self.fd.as_fd()
    }

    /// The counter now.
    pub fn get(&self) -> u64 {
        // SAFETY: the mapping is page-aligned, lives as long as `self`, and is only accessed
        // atomically.
        unsafe { self.counter.as_ref() }.load(Ordering::SeqCst)
    }

    /// Raises the counter (the server's own mapping only; a read-only one is left alone).
    pub fn raise(&self) {
        if self.writable {
            // SAFETY: as in `get`; this mapping is writable.
            unsafe { self.counter.as_ref() }.fetch_add(1, Ordering::SeqCst);
        }
    }

    /// Unmaps it in a process forked from its owner (a call's init, which must not keep the
    /// server's writable mapping); the owner's mapping is unaffected.
    pub fn unmap_in_child(&self) {
        // SAFETY: the mapping was made by `map` with this size; the calling process (a fork
        // that never returns to the owner's code) does not use it afterwards.
        unsafe {
            libc::munmap(
                self.counter.as_ptr().cast(),
                std::mem::size_of::<AtomicU64>(),
            );
        }
    }
}

impl Drop for Epoch {
    fn drop(&mut self) {
        // SAFETY: the mapping was made by `map` with this size and is not used after this.
        unsafe {
            libc::munmap(
                self.counter.as_ptr().cast(),
                std::mem::size_of::<AtomicU64>(),
            );
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_call_kind_ignores_order_and_repeats_and_names_the_private_dir() {
        let kind = CallKind::new(
            &["/usr/bin", "/bin", "/usr/bin"],
            Some(OsStr::new("/p/call-1")),
        );
        assert_eq!(kind.reads, ["/bin", "/usr/bin"]);
        assert_eq!(kind.private_dir.as_deref(), Some(OsStr::new("/p")));
        assert_eq!(CallKind::of_offered(&kind.offered_message()[1..]), kind);
        let none = CallKind::new::<&str>(&[], None);
        assert_eq!(CallKind::of_offered(&none.offered_message()[1..]), none);
    }

    #[test]
    fn an_offer_round_trips_with_its_descriptors() {
        let (toolgate, server) = wire::socket_pair().unwrap();
        let (call, _init) = wire::socket_pair().unwrap();
        let epoch = Epoch::create().unwrap();
        let events = rustix::fs::memfd_create(c"events", rustix::fs::MemfdFlags::CLOEXEC).unwrap();
        let offer = Offer {
            policy: 7,
            epoch: epoch.get(),
            pid: 42,
            kind: CallKind::new(&["/usr/bin"], Some(OsStr::new("/p/c"))),
            guarded: vec![
                ("/w/.git/hooks".into(), Some((1, 2))),
                ("/w/.env".into(), None),
            ],
        };
        let pidfd = wire::pidfd_open(std::process::id() as i32).unwrap();
        offer
            .send(
                server.as_fd(),
                call.as_fd(),
                pidfd.as_fd(),
                &epoch,
                events.as_fd(),
            )
            .unwrap();
        let message = wire::recv(toolgate.as_fd(), false).unwrap();
        let received = Offer::receive(&message.bytes, message.fds).unwrap();
        assert_eq!(received.offer, offer);
        let seen = Epoch::open(received.epoch).unwrap();
        assert_eq!(seen.get(), offer.epoch);
        epoch.raise();
        assert_eq!(
            seen.get(),
            offer.epoch + 1,
            "the server's raise shows in toolgate's map"
        );
        seen.raise();
        assert_eq!(
            seen.get(),
            offer.epoch + 1,
            "toolgate's read-only map is never written"
        );
    }

    #[test]
    fn a_malformed_offer_is_refused() {
        assert!(Offer::receive(&[wire::OFFER, 1, 2], Vec::new()).is_none());
        assert!(Offer::receive(&[wire::READY], Vec::new()).is_none());
    }
}
