//! A lingering close for HTTP connections. When the server answers before it has read the
//! whole request — 413 for a declared length over the limit, 408 for a body that is too slow —
//! and then closes, the unread bytes still arriving make the kernel reset the connection, and a
//! client still writing its body sees "connection reset" or "broken pipe" instead of the answer
//! it was sent. So a connection's shutdown sends FIN first (the client reads the answer, then
//! end of stream) and then reads and discards what the client still sends, until it closes its
//! side, [`LINGER_BYTES`] have been read, or [`LINGER_TIME`] has passed.

use std::future::Future;
use std::io;
use std::pin::Pin;
use std::task::{ready, Context, Poll};
use std::time::Duration;
use tokio::io::{AsyncRead, AsyncWrite, ReadBuf};
use tokio::net::TcpStream;
use tokio::time::Sleep;

/// How long a closing connection keeps reading a client's unread request.
pub(crate) const LINGER_TIME: Duration = Duration::from_secs(2);
/// How much of it at most.
pub(crate) const LINGER_BYTES: usize = 64 << 20;

pub(crate) struct Lingering {
    tcp: TcpStream,
    /// Set once FIN is sent: from then on `poll_shutdown` drains until this fires.
    deadline: Option<Pin<Box<Sleep>>>,
    drained: usize,
}

impl Lingering {
    pub(crate) fn new(tcp: TcpStream) -> Self {
        Self {
            tcp,
            deadline: None,
            drained: 0,
        }
    }
}

impl AsyncRead for Lingering {
    fn poll_read(
        self: Pin<&mut Self>,
        cx: &mut Context<'_>,
        buf: &mut ReadBuf<'_>,
    ) -> Poll<io::Result<()>> {
        Pin::new(&mut self.get_mut().tcp).poll_read(cx, buf)
    }
}

impl AsyncWrite for Lingering {
    fn poll_write(
        self: Pin<&mut Self>,
        cx: &mut Context<'_>,
        buf: &[u8],
    ) -> Poll<io::Result<usize>> {
        Pin::new(&mut self.get_mut().tcp).poll_write(cx, buf)
    }

    fn poll_flush(self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<io::Result<()>> {
        Pin::new(&mut self.get_mut().tcp).poll_flush(cx)
    }

    fn poll_write_vectored(
        self: Pin<&mut Self>,
        cx: &mut Context<'_>,
        bufs: &[io::IoSlice<'_>],
    ) -> Poll<io::Result<usize>> {
        Pin::new(&mut self.get_mut().tcp).poll_write_vectored(cx, bufs)
    }

    fn is_write_vectored(&self) -> bool {
        self.tcp.is_write_vectored()
    }

    fn poll_shutdown(self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<io::Result<()>> {
        let this = self.get_mut();
        if this.deadline.is_none() {
            ready!(Pin::new(&mut this.tcp).poll_shutdown(cx))?;
            this.deadline = Some(Box::pin(tokio::time::sleep(LINGER_TIME)));
        }
        let mut scratch = [0u8; 16 * 1024];
        loop {
            if this.drained >= LINGER_BYTES {
                return Poll::Ready(Ok(()));
            }
            if let Some(d) = this.deadline.as_mut() {
                if d.as_mut().poll(cx).is_ready() {
                    return Poll::Ready(Ok(()));
                }
            }
            let mut buf = ReadBuf::new(&mut scratch);
            match Pin::new(&mut this.tcp).poll_read(cx, &mut buf) {
                // The client closed its side: nothing left to reset.
                Poll::Ready(Ok(())) if buf.filled().is_empty() => return Poll::Ready(Ok(())),
                Poll::Ready(Ok(())) => this.drained += buf.filled().len(),
                // The connection is gone either way; its shutdown did what it could.
                Poll::Ready(Err(_)) => return Poll::Ready(Ok(())),
                Poll::Pending => return Poll::Pending,
            }
        }
    }
}
