//! The redb file behind a durable store: every write commits before the server answers.

use std::path::Path;

use redb::{Database, ReadableDatabase, ReadableTable, TableDefinition};
use serde_json::Value;

use super::ObjectKey;

const OBJECTS: TableDefinition<'_, &str, &[u8]> = TableDefinition::new("objects");
const META: TableDefinition<'_, &str, u64> = TableDefinition::new("meta");
const REVISION: &str = "resourceVersion";
const SEPARATOR: char = '\u{1}';

/// Failure of the durable store.
#[derive(Debug, thiserror::Error)]
pub enum StorageError {
    /// Creating the data directory failed.
    #[error("cannot create data directory {path}")]
    CreateDir {
        /// The directory.
        path: String,
        /// Cause.
        #[source]
        source: std::io::Error,
    },
    /// redb failed.
    #[error("database error")]
    Database(#[from] redb::Error),
    /// A stored object is not valid JSON.
    #[error("stored object {key} is corrupt")]
    Corrupt {
        /// Its key.
        key: String,
        /// Cause.
        #[source]
        source: serde_json::Error,
    },
}

/// An opened database with its objects and revision counter.
pub(super) type Opened = (Durable, Vec<(ObjectKey, Value)>, u64);

/// The open database.
pub(super) struct Durable {
    db: Database,
}

impl std::fmt::Debug for Durable {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Durable").finish_non_exhaustive()
    }
}

fn encode(key: &ObjectKey) -> String {
    format!("{}{SEPARATOR}{}{SEPARATOR}{}", key.storage, key.namespace, key.name)
}

fn decode(text: &str) -> Option<ObjectKey> {
    let mut parts = text.split(SEPARATOR);
    let storage = parts.next()?;
    let namespace = parts.next()?;
    let name = parts.next()?;
    Some(ObjectKey {
        storage: storage.into(),
        namespace: namespace.to_string(),
        name: name.to_string(),
    })
}

impl Durable {
    /// Open (or create) `dir/store.redb` and read every object and the revision counter.
    pub(super) fn open(dir: &Path) -> Result<Opened, StorageError> {
        std::fs::create_dir_all(dir).map_err(|source| StorageError::CreateDir {
            path: dir.display().to_string(),
            source,
        })?;
        let db = Database::create(dir.join("store.redb")).map_err(redb::Error::from)?;
        {
            let txn = db.begin_write().map_err(redb::Error::from)?;
            txn.open_table(OBJECTS).map_err(redb::Error::from)?;
            txn.open_table(META).map_err(redb::Error::from)?;
            txn.commit().map_err(redb::Error::from)?;
        }
        let mut objects = Vec::new();
        let revision;
        {
            let txn = db.begin_read().map_err(redb::Error::from)?;
            let table = txn.open_table(OBJECTS).map_err(redb::Error::from)?;
            for entry in table.iter().map_err(redb::Error::from)? {
                let (key, value) = entry.map_err(redb::Error::from)?;
                let Some(object_key) = decode(key.value()) else {
                    continue;
                };
                let object: Value = serde_json::from_slice(value.value()).map_err(|source| StorageError::Corrupt {
                    key: key.value().replace(SEPARATOR, "/"),
                    source,
                })?;
                objects.push((object_key, object));
            }
            let meta = txn.open_table(META).map_err(redb::Error::from)?;
            revision = meta
                .get(REVISION)
                .map_err(redb::Error::from)?
                .map(|v| v.value())
                .unwrap_or(0);
        }
        Ok((Durable { db }, objects, revision))
    }

    /// Store an object at a revision, durably.
    pub(super) fn put(&self, key: &ObjectKey, object: &Value, revision: u64) -> Result<(), StorageError> {
        let bytes = serde_json::to_vec(object).expect("JSON values serialize");
        let txn = self.db.begin_write().map_err(redb::Error::from)?;
        {
            let mut table = txn.open_table(OBJECTS).map_err(redb::Error::from)?;
            table
                .insert(encode(key).as_str(), bytes.as_slice())
                .map_err(redb::Error::from)?;
            let mut meta = txn.open_table(META).map_err(redb::Error::from)?;
            meta.insert(REVISION, revision).map_err(redb::Error::from)?;
        }
        txn.commit().map_err(redb::Error::from)?;
        Ok(())
    }

    /// Remove an object at a revision, durably.
    pub(super) fn delete(&self, key: &ObjectKey, revision: u64) -> Result<(), StorageError> {
        let txn = self.db.begin_write().map_err(redb::Error::from)?;
        {
            let mut table = txn.open_table(OBJECTS).map_err(redb::Error::from)?;
            table.remove(encode(key).as_str()).map_err(redb::Error::from)?;
            let mut meta = txn.open_table(META).map_err(redb::Error::from)?;
            meta.insert(REVISION, revision).map_err(redb::Error::from)?;
        }
        txn.commit().map_err(redb::Error::from)?;
        Ok(())
    }

    /// Record a revision that no object carries (a compaction).
    pub(super) fn set_revision(&self, revision: u64) -> Result<(), StorageError> {
        let txn = self.db.begin_write().map_err(redb::Error::from)?;
        {
            let mut meta = txn.open_table(META).map_err(redb::Error::from)?;
            meta.insert(REVISION, revision).map_err(redb::Error::from)?;
        }
        txn.commit().map_err(redb::Error::from)?;
        Ok(())
    }
}
