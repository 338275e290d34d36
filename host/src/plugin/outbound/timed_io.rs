//! `wasi:io/poll` and `wasi:io/streams` for contract 0.2 plugins: wasmtime-wasi's own implementation, with every
//! call that blocks measured by the call's [`IoClock`] and cut off when its budget runs out.
//!
//! A 0.2 plugin blocks in exactly these calls while it waits for an HTTP response or reads a body (and when it
//! sleeps): the time they take is kept out of its deadline, so the deadline keeps measuring computation, and is
//! bounded by `outboundBudget` instead. They shadow the definitions `wasmtime_wasi::p2::add_to_linker_sync` made.

use wasmtime::component::{HasData, Linker, Resource, ResourceTable};
use wasmtime_wasi::p2::bindings::sync::io::{poll, streams};
use wasmtime_wasi::p2::{DynInputStream, DynOutputStream, DynPollable, StreamError, StreamResult};
use wasmtime_wasi_io::bindings::wasi::io::poll::{Host as AsyncPoll, HostPollable as AsyncPollable};
use wasmtime_wasi_io::bindings::wasi::io::streams::{HostInputStream as AsyncInput, HostOutputStream as AsyncOutput};

use super::IoClock;
use crate::plugin::call::CallState;

/// The resource table of a call with the clock its blocking calls are measured by.
pub(crate) struct TimedIo<'a> {
    table: &'a mut ResourceTable,
    clock: &'a IoClock,
}

struct HasTimedIo;

impl HasData for HasTimedIo {
    type Data<'a> = TimedIo<'a>;
}

fn timed_io(state: &mut CallState) -> TimedIo<'_> {
    let (table, clock) = state.table_and_clock();
    TimedIo { table, clock }
}

/// Replaces `wasi:io/poll` and `wasi:io/streams` in `linker` with their timed versions.
pub(crate) fn add_timed_io_to_linker(linker: &mut Linker<CallState>) -> wasmtime::Result<()> {
    linker.allow_shadowing(true);
    poll::add_to_linker::<CallState, HasTimedIo>(linker, timed_io)?;
    streams::add_to_linker::<CallState, HasTimedIo>(linker, timed_io)?;
    linker.allow_shadowing(false);
    Ok(())
}

impl TimedIo<'_> {
    fn stream_wait<T>(
        &mut self,
        wait: impl FnOnce(&mut ResourceTable) -> std::pin::Pin<Box<dyn Future<Output = StreamResult<T>> + Send + '_>>,
    ) -> StreamResult<T> {
        let clock = self.clock;
        clock
            .block_on(wait(self.table))
            .unwrap_or_else(|exhausted| Err(StreamError::Trap(wasmtime::Error::new(exhausted))))
    }
}

impl poll::Host for TimedIo<'_> {
    fn poll(&mut self, pollables: Vec<Resource<DynPollable>>) -> wasmtime::Result<Vec<u32>> {
        let clock = self.clock;
        clock.block_on(AsyncPoll::poll(self.table, pollables))?
    }
}

impl poll::HostPollable for TimedIo<'_> {
    fn ready(&mut self, pollable: Resource<DynPollable>) -> wasmtime::Result<bool> {
        wasmtime_wasi::runtime::in_tokio(AsyncPollable::ready(self.table, pollable))
    }

    fn block(&mut self, pollable: Resource<DynPollable>) -> wasmtime::Result<()> {
        let clock = self.clock;
        clock.block_on(AsyncPollable::block(self.table, pollable))?
    }

    fn drop(&mut self, pollable: Resource<DynPollable>) -> wasmtime::Result<()> {
        AsyncPollable::drop(self.table, pollable)
    }
}

impl streams::Host for TimedIo<'_> {
    fn convert_stream_error(&mut self, error: StreamError) -> wasmtime::Result<streams::StreamError> {
        <ResourceTable as streams::Host>::convert_stream_error(self.table, error)
    }
}

impl streams::HostInputStream for TimedIo<'_> {
    fn drop(&mut self, stream: Resource<DynInputStream>) -> wasmtime::Result<()> {
        <ResourceTable as streams::HostInputStream>::drop(self.table, stream)
    }

    fn read(&mut self, stream: Resource<DynInputStream>, len: u64) -> StreamResult<Vec<u8>> {
        <ResourceTable as streams::HostInputStream>::read(self.table, stream, len)
    }

    fn blocking_read(&mut self, stream: Resource<DynInputStream>, len: u64) -> StreamResult<Vec<u8>> {
        self.stream_wait(|table| Box::pin(AsyncInput::blocking_read(table, stream, len)))
    }

    fn skip(&mut self, stream: Resource<DynInputStream>, len: u64) -> StreamResult<u64> {
        <ResourceTable as streams::HostInputStream>::skip(self.table, stream, len)
    }

    fn blocking_skip(&mut self, stream: Resource<DynInputStream>, len: u64) -> StreamResult<u64> {
        self.stream_wait(|table| Box::pin(AsyncInput::blocking_skip(table, stream, len)))
    }

    fn subscribe(&mut self, stream: Resource<DynInputStream>) -> wasmtime::Result<Resource<DynPollable>> {
        <ResourceTable as streams::HostInputStream>::subscribe(self.table, stream)
    }
}

impl streams::HostOutputStream for TimedIo<'_> {
    fn drop(&mut self, stream: Resource<DynOutputStream>) -> wasmtime::Result<()> {
        <ResourceTable as streams::HostOutputStream>::drop(self.table, stream)
    }

    fn check_write(&mut self, stream: Resource<DynOutputStream>) -> StreamResult<u64> {
        <ResourceTable as streams::HostOutputStream>::check_write(self.table, stream)
    }

    fn write(&mut self, stream: Resource<DynOutputStream>, bytes: Vec<u8>) -> StreamResult<()> {
        <ResourceTable as streams::HostOutputStream>::write(self.table, stream, bytes)
    }

    fn blocking_write_and_flush(&mut self, stream: Resource<DynOutputStream>, bytes: Vec<u8>) -> StreamResult<()> {
        self.stream_wait(|table| Box::pin(AsyncOutput::blocking_write_and_flush(table, stream, bytes)))
    }

    fn blocking_write_zeroes_and_flush(&mut self, stream: Resource<DynOutputStream>, len: u64) -> StreamResult<()> {
        self.stream_wait(|table| Box::pin(AsyncOutput::blocking_write_zeroes_and_flush(table, stream, len)))
    }

    fn subscribe(&mut self, stream: Resource<DynOutputStream>) -> wasmtime::Result<Resource<DynPollable>> {
        <ResourceTable as streams::HostOutputStream>::subscribe(self.table, stream)
    }

    fn write_zeroes(&mut self, stream: Resource<DynOutputStream>, len: u64) -> StreamResult<()> {
        <ResourceTable as streams::HostOutputStream>::write_zeroes(self.table, stream, len)
    }

    fn flush(&mut self, stream: Resource<DynOutputStream>) -> StreamResult<()> {
        <ResourceTable as streams::HostOutputStream>::flush(self.table, stream)
    }

    fn blocking_flush(&mut self, stream: Resource<DynOutputStream>) -> StreamResult<()> {
        let borrowed = Resource::new_borrow(stream.rep());
        self.stream_wait(|table| Box::pin(AsyncOutput::blocking_flush(table, borrowed)))
    }

    fn splice(
        &mut self,
        destination: Resource<DynOutputStream>,
        source: Resource<DynInputStream>,
        len: u64,
    ) -> StreamResult<u64> {
        <ResourceTable as streams::HostOutputStream>::splice(self.table, destination, source, len)
    }

    fn blocking_splice(
        &mut self,
        destination: Resource<DynOutputStream>,
        source: Resource<DynInputStream>,
        len: u64,
    ) -> StreamResult<u64> {
        self.stream_wait(|table| Box::pin(AsyncOutput::blocking_splice(table, destination, source, len)))
    }
}
