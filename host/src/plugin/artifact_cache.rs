//! Compiled plugins on local disk, keyed by the wasm's sha256 and the engine's compatibility hash.
//!
//! Deserialising precompiled code is only safe for bytes wasmtime itself produced and nobody altered, so
//! the cache trusts nothing it finds on disk: it remembers the digest of every artifact this process
//! wrote, and deserialises a file only when its bytes still hash to that digest. Artifacts left by other
//! processes (or earlier runs) are ignored and overwritten. What the cache buys is that a plugin seen again
//! in the same process — a reload of an unchanged ConfigMap, a rollback, two plugins with the same
//! component — is not compiled twice.

use std::collections::HashMap;
use std::hash::{Hash, Hasher};
use std::path::{Path, PathBuf};
use std::sync::{Mutex, PoisonError};

use sha2::{Digest, Sha256};
use wasmtime::Engine;
use wasmtime::component::Component;

/// Errors of the artifact cache. None of them is fatal: the caller compiles instead.
#[derive(Debug, thiserror::Error)]
pub enum ArtifactCacheError {
    /// The cache directory or file could not be written.
    #[error("writing compiled artifact {path}")]
    Write {
        /// The file.
        path: PathBuf,
        /// The cause.
        #[source]
        source: std::io::Error,
    },
    /// Precompiling failed.
    #[error("precompiling the component")]
    Precompile(#[source] wasmtime::Error),
    /// The artifact was produced here but could not be loaded back.
    #[error("loading compiled artifact {path}")]
    Load {
        /// The file.
        path: PathBuf,
        /// The cause.
        #[source]
        source: wasmtime::Error,
    },
}

/// Result alias for this module.
pub type Result<T, E = ArtifactCacheError> = std::result::Result<T, E>;

/// A directory of compiled components, trusted only for what this process wrote into it.
#[derive(Debug)]
pub struct ArtifactCache {
    dir: PathBuf,
    compatibility: String,
    /// Artifact file → sha256 of the bytes this process wrote there.
    written: Mutex<HashMap<PathBuf, [u8; 32]>>,
}

impl ArtifactCache {
    /// A cache in `dir` for components compiled by `engine`.
    pub fn new(dir: PathBuf, engine: &Engine) -> Self {
        let mut hasher = std::collections::hash_map::DefaultHasher::new();
        engine.precompile_compatibility_hash().hash(&mut hasher);
        Self {
            dir,
            compatibility: format!("{:016x}", hasher.finish()),
            written: Mutex::default(),
        }
    }

    /// The directory.
    pub fn dir(&self) -> &Path {
        &self.dir
    }

    fn path_for(&self, wasm_sha256: &str) -> PathBuf {
        self.dir.join(format!("{wasm_sha256}-{}.cwasm", self.compatibility))
    }

    /// The component for `wasm` (whose digest is `wasm_sha256`): loaded from an artifact this process wrote,
    /// or compiled and written now. Returns whether it came from the cache.
    pub fn load_or_compile(&self, engine: &Engine, wasm_sha256: &str, wasm: &[u8]) -> Result<(Component, bool)> {
        let path = self.path_for(wasm_sha256);
        if let Some(component) = self.load_own(engine, &path)? {
            return Ok((component, true));
        }
        let artifact = engine
            .precompile_component(wasm)
            .map_err(ArtifactCacheError::Precompile)?;
        let digest: [u8; 32] = Sha256::digest(&artifact).into();
        write_atomically(&self.dir, &path, &artifact).map_err(|source| ArtifactCacheError::Write {
            path: path.clone(),
            source,
        })?;
        self.written
            .lock()
            .unwrap_or_else(PoisonError::into_inner)
            .insert(path.clone(), digest);
        Ok((
            deserialize_own(engine, &artifact).map_err(|source| ArtifactCacheError::Load { path, source })?,
            false,
        ))
    }

    /// Loads `path` only if this process wrote it and its bytes are unchanged.
    fn load_own(&self, engine: &Engine, path: &Path) -> Result<Option<Component>> {
        let Some(expected) = self
            .written
            .lock()
            .unwrap_or_else(PoisonError::into_inner)
            .get(path)
            .copied()
        else {
            return Ok(None);
        };
        let Ok(bytes) = std::fs::read(path) else {
            return Ok(None);
        };
        let actual: [u8; 32] = Sha256::digest(&bytes).into();
        if actual != expected {
            tracing::warn!(path = %path.display(), "compiled artifact changed on disk; ignoring it and recompiling");
            return Ok(None);
        }
        deserialize_own(engine, &bytes)
            .map(Some)
            .map_err(|source| ArtifactCacheError::Load {
                path: path.to_path_buf(),
                source,
            })
    }
}

/// Deserialises an artifact whose bytes were produced by `Engine::precompile_component` in this process and
/// verified against the digest recorded then.
#[allow(unsafe_code)]
fn deserialize_own(engine: &Engine, artifact: &[u8]) -> wasmtime::Result<Component> {
    // SAFETY: `artifact` is exactly what this process's engine produced (checked by sha256 by the caller,
    // or taken straight from `precompile_component`), which is the contract `deserialize` requires.
    unsafe { Component::deserialize(engine, artifact) }
}

fn write_atomically(dir: &Path, path: &Path, bytes: &[u8]) -> std::io::Result<()> {
    std::fs::create_dir_all(dir)?;
    let temporary = path.with_extension(format!("tmp{}", std::process::id()));
    std::fs::write(&temporary, bytes)?;
    std::fs::rename(&temporary, path)
}
