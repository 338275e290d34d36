//! Bounded capture of guest stdout and stderr, later forwarded to `tracing`.

use std::pin::Pin;
use std::sync::{Arc, Mutex, PoisonError};
use std::task::{Context, Poll};

use bytes::Bytes;
use wasmtime_wasi::cli::{IsTerminal, StdoutStream};
use wasmtime_wasi::p2::{OutputStream, Pollable, StreamResult};

/// An output stream that keeps at most `capacity` bytes and silently drops the rest, counting what it dropped.
///
/// Unlike wasmtime's `MemoryOutputPipe` it never traps: a chatty plugin loses output, not its reconcile.
#[derive(Debug, Clone)]
pub(crate) struct CapturedOutput {
    capacity: usize,
    inner: Arc<Mutex<Captured>>,
}

#[derive(Debug, Default)]
struct Captured {
    bytes: Vec<u8>,
    dropped: usize,
}

impl CapturedOutput {
    pub(crate) fn new(capacity: usize) -> Self {
        Self {
            capacity,
            inner: Arc::default(),
        }
    }

    fn push(&self, data: &[u8]) {
        let mut captured = self.inner.lock().unwrap_or_else(PoisonError::into_inner);
        let room = self.capacity.saturating_sub(captured.bytes.len());
        let kept = room.min(data.len());
        captured.bytes.extend_from_slice(&data[..kept]);
        captured.dropped += data.len() - kept;
    }

    /// The captured text (lossily decoded) and the number of bytes dropped past the capacity.
    pub(crate) fn take(&self) -> (String, usize) {
        let mut captured = self.inner.lock().unwrap_or_else(PoisonError::into_inner);
        let text = String::from_utf8_lossy(&captured.bytes).into_owned();
        let dropped = captured.dropped;
        captured.bytes.clear();
        captured.dropped = 0;
        (text, dropped)
    }
}

impl IsTerminal for CapturedOutput {
    fn is_terminal(&self) -> bool {
        false
    }
}

impl StdoutStream for CapturedOutput {
    fn p2_stream(&self) -> Box<dyn OutputStream> {
        Box::new(self.clone())
    }

    fn async_stream(&self) -> Box<dyn tokio::io::AsyncWrite + Send + Sync> {
        Box::new(self.clone())
    }
}

#[wasmtime_wasi::async_trait]
impl Pollable for CapturedOutput {
    async fn ready(&mut self) {}
}

impl OutputStream for CapturedOutput {
    fn write(&mut self, bytes: Bytes) -> StreamResult<()> {
        self.push(&bytes);
        Ok(())
    }

    fn flush(&mut self) -> StreamResult<()> {
        Ok(())
    }

    fn check_write(&mut self) -> StreamResult<usize> {
        // Always accept: output past the capacity is counted and dropped rather than refused.
        Ok(64 * 1024)
    }
}

impl tokio::io::AsyncWrite for CapturedOutput {
    fn poll_write(self: Pin<&mut Self>, _cx: &mut Context<'_>, buf: &[u8]) -> Poll<std::io::Result<usize>> {
        self.push(buf);
        Poll::Ready(Ok(buf.len()))
    }

    fn poll_flush(self: Pin<&mut Self>, _cx: &mut Context<'_>) -> Poll<std::io::Result<()>> {
        Poll::Ready(Ok(()))
    }

    fn poll_shutdown(self: Pin<&mut Self>, _cx: &mut Context<'_>) -> Poll<std::io::Result<()>> {
        Poll::Ready(Ok(()))
    }
}

/// The message of a Rust panic in captured stderr: `panicked at src/lib.rs:3:5: boom`.
pub(crate) fn panic_message(stderr: &str) -> Option<String> {
    let start = stderr.find("panicked at ")?;
    let rest = &stderr[start..];
    let message: Vec<&str> = rest
        .lines()
        .take_while(|line| !line.starts_with("note: run with `RUST_BACKTRACE"))
        .map(str::trim)
        .filter(|line| !line.is_empty())
        .collect();
    Some(message.join(" "))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn keeps_up_to_capacity_and_counts_the_rest() {
        let output = CapturedOutput::new(5);
        output.push(b"hello world");
        output.push(b"!");
        assert_eq!(output.take(), ("hello".to_string(), 7));
        assert_eq!(output.take(), (String::new(), 0));
    }

    #[test]
    fn extracts_the_panic_message() {
        let stderr = "\nthread '<unnamed>' panicked at src/lib.rs:12:9:\nboom: 42\nnote: run with `RUST_BACKTRACE=1` environment variable to display a backtrace\n";
        assert_eq!(
            panic_message(stderr).as_deref(),
            Some("panicked at src/lib.rs:12:9: boom: 42")
        );
        assert_eq!(panic_message("just some output"), None);
    }
}
