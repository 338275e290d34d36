//! The error a plugin returns from `reconcile`.

use std::fmt;

/// A plugin's own error: a message, with the source chain of the error it came from flattened into it
/// (`outer: cause: root cause`).
///
/// The host records the message on the primary object (`Reconciled=False`, reason `PluginError`) and
/// retries with backoff. Any `std::error::Error` converts into it, so `?` works on serde_json errors and
/// on the plugin's own error types.
///
/// ```
/// use wasm_reconciler_sdk::Error;
///
/// fn parse(text: &str) -> Result<u32, Error> {
///     let number: u32 = serde_json::from_str(text)?;
///     if number == 0 {
///         wasm_reconciler_sdk::bail!("number must be positive, got {number}");
///     }
///     Ok(number)
/// }
///
/// assert_eq!(parse("3").unwrap(), 3);
/// assert_eq!(parse("0").unwrap_err().to_string(), "number must be positive, got 0");
/// assert!(parse("x").is_err());
/// ```
///
/// `Error` deliberately does not implement `std::error::Error` itself (like `anyhow::Error`), which is
/// what allows the blanket conversion from every error type.
#[derive(Clone, PartialEq, Eq)]
pub struct Error {
    message: String,
}

impl Error {
    /// An error with this message.
    pub fn msg(message: impl fmt::Display) -> Self {
        Self {
            message: message.to_string(),
        }
    }

    /// Prefixes the message with what was being done: `context: message`.
    ///
    /// ```
    /// use wasm_reconciler_sdk::Error;
    ///
    /// let error = Error::msg("missing field `image`").context("reading spec");
    /// assert_eq!(error.to_string(), "reading spec: missing field `image`");
    /// ```
    pub fn context(self, context: impl fmt::Display) -> Self {
        Self {
            message: format!("{context}: {}", self.message),
        }
    }

    /// The full message, including flattened causes.
    pub fn message(&self) -> &str {
        &self.message
    }
}

impl fmt::Display for Error {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(&self.message)
    }
}

impl fmt::Debug for Error {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "Error({:?})", self.message)
    }
}

impl Error {
    /// A JSON error without its position: the position points into a text the host or the SDK wrote, which
    /// the plugin's author never sees, and the message then reads the same as a plugin in another language
    /// gives.
    pub(crate) fn from_json(error: &serde_json::Error) -> Self {
        let message = error.to_string();
        let position = format!(" at line {} column {}", error.line(), error.column());
        Self::msg(message.strip_suffix(position.as_str()).unwrap_or(&message))
    }
}

impl<E> From<E> for Error
where
    E: std::error::Error + Send + Sync + 'static,
{
    fn from(error: E) -> Self {
        Self::from_chain(&error)
    }
}

impl Error {
    /// The message of an error and its causes; one body for every error type, so each conversion a plugin
    /// uses adds no code to the component.
    fn from_chain(error: &(dyn std::error::Error + 'static)) -> Self {
        let mut message = error.to_string();
        let mut source = error.source();
        while let Some(cause) = source {
            let cause_text = cause.to_string();
            // Error types often repeat their cause in their own message; do not print it twice.
            if !message.contains(&cause_text) {
                message.push_str(": ");
                message.push_str(&cause_text);
            }
            source = cause.source();
        }
        Self { message }
    }
}

/// Returns early from a function returning `Result<_, wasm_reconciler_sdk::Error>` with a formatted message.
///
/// ```
/// fn check(replicas: i32) -> Result<(), wasm_reconciler_sdk::Error> {
///     if replicas < 0 {
///         wasm_reconciler_sdk::bail!("spec.replicas must not be negative, got {replicas}");
///     }
///     Ok(())
/// }
/// assert!(check(-1).is_err());
/// ```
#[macro_export]
macro_rules! bail {
    ($($arg:tt)+) => {
        return ::core::result::Result::Err($crate::Error::msg(::std::format!($($arg)+)))
    };
}

/// Returns early with a formatted error unless the condition holds.
///
/// ```
/// fn check(burst: i32) -> Result<(), wasm_reconciler_sdk::Error> {
///     wasm_reconciler_sdk::ensure!(burst >= 1, "spec.burst must be at least 1, got {burst}");
///     Ok(())
/// }
/// assert_eq!(check(0).unwrap_err().to_string(), "spec.burst must be at least 1, got 0");
/// ```
#[macro_export]
macro_rules! ensure {
    ($condition:expr, $($arg:tt)+) => {
        if !$condition {
            $crate::bail!($($arg)+);
        }
    };
}

#[cfg(test)]
mod tests {
    use super::*;

    #[derive(Debug)]
    struct Outer(Inner);
    #[derive(Debug)]
    struct Inner;

    impl fmt::Display for Outer {
        fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
            f.write_str("building children")
        }
    }
    impl std::error::Error for Outer {
        fn source(&self) -> Option<&(dyn std::error::Error + 'static)> {
            Some(&self.0)
        }
    }
    impl fmt::Display for Inner {
        fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
            f.write_str("template has no data")
        }
    }
    impl std::error::Error for Inner {}

    #[test]
    fn flattens_the_source_chain() {
        let error = Error::from(Outer(Inner));
        assert_eq!(error.message(), "building children: template has no data");
    }

    #[test]
    fn does_not_repeat_a_cause_already_in_the_message() {
        let json_error = serde_json::from_str::<u32>("x").unwrap_err();
        let text = json_error.to_string();
        assert_eq!(Error::from(json_error).message(), text);
    }

    #[test]
    fn context_prefixes_the_message() {
        assert_eq!(Error::msg("boom").context("step").to_string(), "step: boom");
    }
}
