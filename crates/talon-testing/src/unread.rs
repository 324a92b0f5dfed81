//! A stream that is never read: opened on a socket with a 4 KiB receive
//! window, read only up to its answer's head. What a hostile client's
//! unread `GET` stream looks like, for the tests and benches that measure
//! what it costs the gateway.

use std::io::{Read as _, Write as _};
use std::net::{SocketAddr, TcpStream};

/// Opens `GET path` at `addr` with `token` and reads the answer's head
/// and nothing more; an answer other than 200 is an error naming it.
pub fn unread_stream(addr: SocketAddr, token: &str, path: &str) -> std::io::Result<TcpStream> {
    let socket = socket2::Socket::new(socket2::Domain::IPV4, socket2::Type::STREAM, None)?;
    socket.set_recv_buffer_size(4096)?;
    socket.connect(&addr.into())?;
    let mut stream: TcpStream = socket.into();
    write!(
        stream,
        "GET {path} HTTP/1.1\r\nHost: localhost\r\nAuthorization: Bearer {token}\r\n\r\n"
    )?;
    let mut head = Vec::new();
    let mut byte = [0u8; 1];
    while !head.ends_with(b"\r\n\r\n") {
        if stream.read(&mut byte)? == 0 {
            return Err(std::io::Error::other("the answer ended in its head"));
        }
        head.push(byte[0]);
    }
    if !head.starts_with(b"HTTP/1.1 200") {
        return Err(std::io::Error::other(format!(
            "the stream was refused: {}",
            String::from_utf8_lossy(&head)
        )));
    }
    Ok(stream)
}
