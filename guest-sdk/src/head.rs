//! The head of a Kubernetes object's JSON text: `apiVersion`, `kind` and `metadata`, read without the rest.
//!
//! One type serves the primary and the children alike, so the component carries one reader.
//!
//! Objects put these three first (the API server does, and so does every serde type deriving from the
//! Kubernetes schema), so [`Head::read`] stops as soon as it has them and never scans `spec`, `data` or
//! `status`. Fields in another order are still found; the read then goes on to the end of the object.

use std::fmt;

use serde::de::{IgnoredAny, MapAccess, Visitor};
use serde::{Deserialize, Deserializer};

/// `apiVersion`, `kind` and what every plugin reads of `metadata`, of one object.
#[derive(Debug, Clone, Default)]
pub(crate) struct Head {
    pub(crate) api_version: Option<String>,
    pub(crate) kind: Option<String>,
    pub(crate) metadata: Option<Metadata>,
}

/// The metadata fields every plugin reads.
#[derive(Debug, Clone, Default, Deserialize)]
pub(crate) struct Metadata {
    pub(crate) name: Option<String>,
    pub(crate) namespace: Option<String>,
    pub(crate) uid: Option<String>,
    pub(crate) generation: Option<i64>,
}

impl Head {
    /// Reads the head of an object's JSON text. An error when the text is not a JSON object, when one of
    /// the three fields has the wrong type, or when the text breaks off before all three were read.
    pub(crate) fn read(text: &str) -> Result<Self, serde_json::Error> {
        let mut head = Self::default();
        let mut deserializer = serde_json::Deserializer::from_str(text);
        match deserializer.deserialize_map(HeadVisitor { head: &mut head }) {
            Ok(()) => Ok(head),
            // The visitor stopped before the end of the object on purpose: the rest of the text is not read,
            // and the deserializer reports the unfinished object.
            Err(_) if head.is_complete() => Ok(head),
            Err(error) => Err(error),
        }
    }

    fn is_complete(&self) -> bool {
        self.api_version.is_some() && self.kind.is_some() && self.metadata.is_some()
    }

    /// The metadata, or its default when the object has no `metadata`.
    pub(crate) fn into_metadata(self) -> Metadata {
        self.metadata.unwrap_or_default()
    }

    /// `metadata.name`, if set.
    pub(crate) fn name(&self) -> Option<&str> {
        self.metadata.as_ref()?.name.as_deref()
    }
}

#[derive(Deserialize)]
#[serde(field_identifier)]
enum Field {
    #[serde(rename = "apiVersion")]
    ApiVersion,
    #[serde(rename = "kind")]
    Kind,
    #[serde(rename = "metadata")]
    Metadata,
    #[serde(other)]
    Other,
}

struct HeadVisitor<'a> {
    head: &'a mut Head,
}

impl<'de> Visitor<'de> for HeadVisitor<'_> {
    type Value = ();

    fn expecting(&self, formatter: &mut fmt::Formatter<'_>) -> fmt::Result {
        formatter.write_str("a Kubernetes object")
    }

    fn visit_map<A: MapAccess<'de>>(self, mut map: A) -> Result<(), A::Error> {
        while let Some(field) = map.next_key::<Field>()? {
            match field {
                Field::ApiVersion => self.head.api_version = Some(map.next_value()?),
                Field::Kind => self.head.kind = Some(map.next_value()?),
                Field::Metadata => self.head.metadata = Some(map.next_value()?),
                Field::Other => {
                    map.next_value::<IgnoredAny>()?;
                }
            }
            if self.head.is_complete() {
                return Ok(());
            }
        }
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn reads_the_three_fields_and_stops_before_the_rest() {
        // The text breaks off after the head: a full parse would fail, the head read does not need the rest.
        let head =
            Head::read(r#"{"apiVersion":"v1","kind":"ConfigMap","metadata":{"name":"a","uid":"u"},"data":{"#).unwrap();
        assert_eq!(head.api_version.as_deref(), Some("v1"));
        assert_eq!(head.kind.as_deref(), Some("ConfigMap"));
        assert_eq!(head.name(), Some("a"));
    }

    #[test]
    fn finds_fields_in_any_order() {
        let head =
            Head::read(r#"{"data":{"k":"v"},"metadata":{"name":"a"},"kind":"ConfigMap","apiVersion":"v1"}"#).unwrap();
        assert_eq!(head.api_version.as_deref(), Some("v1"));
        assert_eq!(head.kind.as_deref(), Some("ConfigMap"));
    }

    #[test]
    fn missing_fields_read_as_absent() {
        let head = Head::read(r#"{"data":{}}"#).unwrap();
        assert!(head.api_version.is_none() && head.kind.is_none() && head.metadata.is_none());
    }

    #[test]
    fn malformed_text_before_the_head_is_complete_is_an_error() {
        assert!(Head::read(r#"{"apiVersion":"v1","kind":"#).is_err());
        assert!(Head::read(r#"{"apiVersion":5}"#).is_err());
        assert!(Head::read(r#""x""#).is_err());
        assert!(Head::read("").is_err());
    }
}
