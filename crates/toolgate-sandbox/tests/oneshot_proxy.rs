//! The one-shot launcher with the proxy network (`--network-proxy PORT --proxy-handoff FD`):
//! its init makes the call's network namespace and the proxy's listener, hands the listener
//! over the inherited socket and starts the program only once toolgate answers `HANDED_OFF`.
//! The program never holds the handoff socket, reaches nothing but the listener, and a
//! launcher without a proper handoff runs nothing.

#![cfg(target_os = "linux")]

mod common;

use std::io::Read;
use std::net::{Ipv4Addr, SocketAddr, TcpListener};
use std::os::fd::{AsFd, AsRawFd, OwnedFd};
use std::os::unix::process::CommandExt;
use std::process::{Child, Command, Stdio};
use std::time::Duration;

use common::{launcher, text, view_available, Fixture};
use toolgate_sandbox::protocol::{wire, EXIT_SETUP_FAILED, PROXY_PORT};

/// A socket pair like toolgate's: (ours, the launcher's).
fn handoff_pair() -> (OwnedFd, OwnedFd) {
    wire::socket_pair().unwrap()
}

/// The launcher under `policy` running bash `script`, with `fd3` as its descriptor 3.
fn spawn(f: &Fixture, policy: &[&str], script: &str, fd3: Option<OwnedFd>) -> Child {
    let mut command = Command::new(launcher());
    command
        .arg("--parent")
        .arg(std::process::id().to_string())
        .args(f.policy(false, &[]))
        .args(policy)
        .arg("--")
        .args(["/bin/bash", "-c", script])
        .current_dir(&f.work)
        .env_clear()
        .env("PATH", "/usr/bin:/bin")
        .stdout(Stdio::piped())
        .stderr(Stdio::piped());
    if let Some(fd) = fd3 {
        let raw = fd.as_raw_fd();
        // SAFETY: dup2 in the forked child before exec; `fd` outlives the spawn below.
        unsafe {
            command.pre_exec(move || {
                if libc::dup2(raw, 3) < 0 {
                    return Err(std::io::Error::last_os_error());
                }
                Ok(())
            });
        }
        let child = command.spawn().unwrap();
        drop(fd);
        return child;
    }
    command.spawn().unwrap()
}

const PROXY: &[&str] = &[
    "--seccomp",
    "--network-proxy",
    "3128",
    "--proxy-handoff",
    "3",
];

/// Receives the listener the init hands over; `None` when the launcher ended instead.
fn receive_listener(ours: &OwnedFd) -> Option<TcpListener> {
    let message = wire::recv(ours.as_fd(), true).unwrap();
    if message.bytes.is_empty() {
        return None;
    }
    assert_eq!(message.bytes, [wire::LISTENER]);
    let mut fds = message.fds;
    assert_eq!(fds.len(), 1);
    let listener = TcpListener::from(fds.remove(0));
    assert_eq!(
        listener.local_addr().unwrap(),
        SocketAddr::from((Ipv4Addr::LOCALHOST, PROXY_PORT))
    );
    Some(listener)
}

#[test]
fn the_listener_is_handed_over_before_the_program_starts_and_is_its_only_way_out() {
    if !view_available() {
        return;
    }
    let f = Fixture::new();
    // A service on this host's loopback the program must not reach directly.
    let host = TcpListener::bind("127.0.0.1:0").unwrap();
    let host_port = host.local_addr().unwrap().port();
    host.set_nonblocking(true).unwrap();
    let script = format!(
        r#"echo "sockets=$(ls -l /proc/$$/fd | grep -c socket)"
(echo x > /dev/tcp/127.0.0.1/{host_port}) 2>/dev/null && echo "direct=reached" || echo "direct=refused"
(echo x > /dev/udp/127.0.0.1/53) 2>/dev/null && echo "udp=sent" || echo "udp=refused"
(echo x > /dev/tcp/10.0.0.1/80) 2>/dev/null && echo "outside=reached" || echo "outside=refused"
echo through-the-proxy > /dev/tcp/127.0.0.1/3128 && echo "proxy=reached""#
    );
    let (ours, theirs) = handoff_pair();
    let child = spawn(&f, PROXY, &script, Some(theirs));
    let listener = receive_listener(&ours).expect("the launcher handed no listener over");
    wire::send(ours.as_fd(), &[wire::HANDED_OFF], &[]).unwrap();
    let (mut stream, _) = listener.accept().unwrap();
    stream
        .set_read_timeout(Some(Duration::from_secs(30)))
        .unwrap();
    let mut got = String::new();
    stream.read_to_string(&mut got).unwrap();
    assert_eq!(got, "through-the-proxy\n");
    let out = child.wait_with_output().unwrap();
    assert!(out.status.success(), "{out:?}");
    assert_eq!(
        text(&out.stdout),
        "sockets=0\ndirect=refused\nudp=refused\noutside=refused\nproxy=reached\n",
        "{}",
        text(&out.stderr)
    );
    // The handoff socket is closed on the launcher's side once it is done.
    let after = wire::recv(ours.as_fd(), true).unwrap();
    assert!(after.bytes.is_empty() && after.fds.is_empty());
    assert!(host.accept().is_err(), "the host's service was reached");
}

#[test]
fn without_toolgate_s_answer_the_program_never_starts() {
    if !view_available() {
        return;
    }
    let f = Fixture::new();
    let marker = f.work.join("ran");
    // toolgate takes the listener but ends before answering; then one that never reads.
    for take in [true, false] {
        let (ours, theirs) = handoff_pair();
        let child = spawn(&f, PROXY, "touch ran", Some(theirs));
        if take {
            receive_listener(&ours);
        }
        drop(ours);
        let out = child.wait_with_output().unwrap();
        assert_eq!(out.status.code(), Some(EXIT_SETUP_FAILED), "{out:?}");
        assert!(
            text(&out.stderr).contains("toolgate did not take the egress proxy's listener")
                || text(&out.stderr).contains("handing the egress proxy's listener to toolgate"),
            "{}",
            text(&out.stderr)
        );
        assert!(!marker.exists(), "the program ran without its proxy");
    }
    // An answer other than HANDED_OFF is no answer.
    let (ours, theirs) = handoff_pair();
    let child = spawn(&f, PROXY, "touch ran", Some(theirs));
    receive_listener(&ours);
    wire::send(ours.as_fd(), &[wire::LISTENER], &[]).unwrap();
    let out = child.wait_with_output().unwrap();
    assert_eq!(out.status.code(), Some(EXIT_SETUP_FAILED), "{out:?}");
    assert!(!marker.exists());
}

#[test]
fn the_handoff_must_be_an_inherited_seqpacket_socket_and_goes_with_the_proxy_network_only() {
    let f = Fixture::new();
    let marker = f.work.join("ran");
    let null = std::fs::File::open("/dev/null").unwrap();
    let (stream, _peer) = std::os::unix::net::UnixStream::pair().unwrap();
    let (_ours, theirs) = handoff_pair();
    let cases: Vec<(&[&str], Option<OwnedFd>, &str)> = vec![
        (
            &["--seccomp", "--network-proxy", "3128"],
            None,
            "needs --proxy-handoff",
        ),
        (PROXY, Some(OwnedFd::from(null)), "not the handoff socket"),
        (PROXY, Some(OwnedFd::from(stream)), "not the handoff socket"),
        (PROXY, None, "not the handoff socket"), // descriptor 3 not open
        (
            &["--seccomp", "--proxy-handoff", "3"],
            Some(theirs),
            "goes with --network-proxy only",
        ),
        (
            &["--network-proxy", "3128", "--proxy-handoff", "2"],
            None,
            "not an inherited descriptor",
        ),
    ];
    for (policy, fd3, needle) in cases {
        let out = spawn(&f, policy, "touch ran", fd3)
            .wait_with_output()
            .unwrap();
        assert_eq!(
            out.status.code(),
            Some(EXIT_SETUP_FAILED),
            "{policy:?}: {out:?}"
        );
        assert!(
            text(&out.stderr).contains(needle),
            "{policy:?}: {}",
            text(&out.stderr)
        );
        assert!(!marker.exists(), "{policy:?}: the program ran");
    }
}
