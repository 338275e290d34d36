//! Pulled blobs (components and manifests) kept by digest, in memory and — when the host has an artifact cache
//! directory — on disk under `oci/sha256/`. Every read is hashed again and must match its name: a file altered on
//! disk is a miss, never a component.

use std::collections::VecDeque;
use std::path::PathBuf;
use std::sync::{Arc, Mutex, PoisonError};

use super::artifact::sha256_digest;
use super::reference::check_digest;

/// How many blobs stay in memory (the most recently used)...
const MEMORY_ENTRIES: usize = 8;
/// ... and how many bytes at most: one large component (a Python plugin is ~19 MB); the disk keeps the rest.
const MEMORY_BYTES: usize = 64 * 1024 * 1024;

/// Blobs by digest.
#[derive(Debug, Default)]
pub struct ComponentStore {
    dir: Option<PathBuf>,
    memory: Mutex<VecDeque<(String, Arc<Vec<u8>>)>>,
}

impl ComponentStore {
    /// A store in memory, and on disk in `<artifact_cache>/oci` when given.
    pub fn new(artifact_cache: Option<PathBuf>) -> Self {
        Self {
            dir: artifact_cache.map(|dir| dir.join("oci").join("sha256")),
            memory: Mutex::default(),
        }
    }

    /// The blob named `digest` (`sha256:…`), if kept and intact.
    pub fn get(&self, digest: &str) -> Option<Arc<Vec<u8>>> {
        check_digest(digest).ok()?;
        {
            let mut memory = self.memory.lock().unwrap_or_else(PoisonError::into_inner);
            if let Some(index) = memory.iter().position(|(d, _)| d == digest) {
                let entry = memory.remove(index).expect("found above");
                let bytes = entry.1.clone();
                memory.push_back(entry);
                return Some(bytes);
            }
        }
        let path = self.path(digest)?;
        let bytes = std::fs::read(&path).ok()?;
        if sha256_digest(&bytes) != digest {
            tracing::warn!(path = %path.display(), "a cached blob does not match its digest; ignoring it");
            let _ = std::fs::remove_file(&path);
            return None;
        }
        let bytes = Arc::new(bytes);
        self.remember(digest, bytes.clone());
        Some(bytes)
    }

    /// Keeps `bytes`, which must hash to `digest`.
    pub fn put(&self, digest: &str, bytes: Arc<Vec<u8>>) {
        if check_digest(digest).is_err() || sha256_digest(&bytes) != digest {
            return;
        }
        if let Some(path) = self.path(digest) {
            let written = path.parent().map_or(Ok(()), std::fs::create_dir_all).and_then(|()| {
                let temporary = path.with_extension(format!("tmp-{}", std::process::id()));
                std::fs::write(&temporary, bytes.as_slice())?;
                std::fs::rename(&temporary, &path)
            });
            if let Err(error) = written {
                tracing::warn!(path = %path.display(), error = %error, "could not cache a pulled blob on disk");
            }
        }
        self.remember(digest, bytes);
    }

    fn remember(&self, digest: &str, bytes: Arc<Vec<u8>>) {
        let mut memory = self.memory.lock().unwrap_or_else(PoisonError::into_inner);
        memory.retain(|(d, _)| d != digest);
        memory.push_back((digest.to_owned(), bytes));
        while memory.len() > MEMORY_ENTRIES
            || (memory.len() > 1 && memory.iter().map(|(_, b)| b.len()).sum::<usize>() > MEMORY_BYTES)
        {
            memory.pop_front();
        }
    }

    fn path(&self, digest: &str) -> Option<PathBuf> {
        let hex = digest.strip_prefix("sha256:")?;
        Some(self.dir.as_ref()?.join(hex))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn blobs_survive_a_new_store_and_altered_files_are_misses() {
        let dir = tempfile::tempdir().unwrap();
        let blob = Arc::new(b"component".to_vec());
        let digest = sha256_digest(&blob);
        let store = ComponentStore::new(Some(dir.path().to_path_buf()));
        assert!(store.get(&digest).is_none());
        store.put(&digest, blob.clone());
        assert_eq!(store.get(&digest).as_deref(), Some(&*blob));

        let reopened = ComponentStore::new(Some(dir.path().to_path_buf()));
        assert_eq!(reopened.get(&digest).as_deref(), Some(&*blob), "read back from disk");

        let file = dir.path().join("oci/sha256").join(digest.trim_start_matches("sha256:"));
        std::fs::write(&file, b"tampered").unwrap();
        let tampered = ComponentStore::new(Some(dir.path().to_path_buf()));
        assert!(tampered.get(&digest).is_none(), "an altered file is a miss");
        assert!(!file.exists(), "and is removed");
    }

    #[test]
    fn wrong_digests_are_not_stored() {
        let store = ComponentStore::new(None);
        store.put(&sha256_digest(b"a"), Arc::new(b"b".to_vec()));
        assert!(store.get(&sha256_digest(b"a")).is_none());
        assert!(store.get("sha256:../../etc/passwd").is_none());
    }

    #[test]
    fn memory_keeps_the_most_recent() {
        let store = ComponentStore::new(None);
        let digests: Vec<String> = (0..MEMORY_ENTRIES + 1)
            .map(|i| {
                let blob = Arc::new(vec![i as u8]);
                let digest = sha256_digest(&blob);
                store.put(&digest, blob);
                digest
            })
            .collect();
        assert!(store.get(&digests[0]).is_none(), "the oldest was dropped");
        assert!(store.get(&digests[MEMORY_ENTRIES]).is_some());

        let large = |byte: u8| {
            let blob = Arc::new(vec![byte; MEMORY_BYTES / 2 + 1]);
            let digest = sha256_digest(&blob);
            store.put(&digest, blob);
            digest
        };
        let (first, second) = (large(1), large(2));
        assert!(
            store.get(&first).is_none(),
            "two large blobs do not both stay in memory"
        );
        assert!(store.get(&second).is_some());
    }
}
