//! Who may write: Leases decide which replica holds a role (the leader, a shard member, the sharder), and each
//! role's [`Fence`] is checked before every write made in it, on this replica's own clock, so that a replica that
//! may have lost its role — paused, cut off, or simply slower than its successor — sends nothing.
//!
//! A Lease is not a lock: the API server lets another replica take it once the holder's renewals stop, and the old
//! holder learns of that only at its next renewal. The fence closes earlier, a margin before any other replica can
//! judge the Lease lapsed, and a unit of work carries a [`Ticket`] for the term it began in.

pub mod election;
pub mod fence;

pub use self::election::Election;
pub use self::fence::{BootInstant, Fence, Fenced, Ticket};
