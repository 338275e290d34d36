//! The host side of contract 0.3's `view` interface: the world view lent to one call as a resource, read by the
//! plugin part by part. The children stay here; `children` answers which of them contain an object without handing
//! any over.

use serde_json::Value;
use wasmtime::component::Resource;

use wasm_reconciler_contract::json::Expected;

use super::WorldView;
use super::bindings::v0_3::wasm_reconciler::plugin0_3_0::view;
use super::call::CallState;

/// The world view of one 0.3 call, in the call's resource table for the length of the call.
#[derive(Debug)]
pub struct LentView {
    view: WorldView,
}

impl LentView {
    /// Lends `view`.
    pub(crate) fn new(view: WorldView) -> Self {
        Self { view }
    }

    /// Summaries of every child; with `expected` (JSON text of an object), whether each contains it.
    pub(crate) fn summaries(&self, expected: Option<&str>) -> Result<Vec<view::ChildSummary>, String> {
        let expected = expected
            .map(|text| match text.trim_start().starts_with('{') {
                true => Expected::parse(text).map_err(|error| format!("`expected` is not valid JSON: {error}")),
                false => match serde_json::from_str::<Value>(text) {
                    Ok(_) => Err("`expected` must be a JSON object".to_owned()),
                    Err(error) => Err(format!("`expected` is not valid JSON: {error}")),
                },
            })
            .transpose()?;
        self.view
            .children
            .iter()
            .enumerate()
            .map(|(index, text)| {
                wasm_reconciler_contract::json::summarize(text, expected.as_ref())
                    .map(|summary| view::ChildSummary {
                        api_version: summary.api_version,
                        kind: summary.kind,
                        name: summary.name,
                        contains: summary.contains,
                    })
                    .map_err(|error| format!("child #{index} is not an object: {error}"))
            })
            .collect()
    }
}

impl view::Host for CallState {}

impl CallState {
    fn lent(&self, view: &Resource<LentView>) -> wasmtime::Result<&LentView> {
        Ok(self.table().get(view)?)
    }
}

impl view::HostWorldView for CallState {
    fn primary(&mut self, view: Resource<LentView>) -> wasmtime::Result<String> {
        Ok(self.lent(&view)?.view.primary.clone())
    }

    fn config(&mut self, view: Resource<LentView>) -> wasmtime::Result<String> {
        Ok(self.lent(&view)?.view.config.clone())
    }

    fn deleting(&mut self, view: Resource<LentView>) -> wasmtime::Result<bool> {
        Ok(self.lent(&view)?.view.deleting)
    }

    fn attempt(&mut self, view: Resource<LentView>) -> wasmtime::Result<u32> {
        Ok(self.lent(&view)?.view.attempt)
    }

    fn children(
        &mut self,
        view: Resource<LentView>,
        expected: Option<String>,
    ) -> wasmtime::Result<Result<Vec<view::ChildSummary>, String>> {
        Ok(self.lent(&view)?.summaries(expected.as_deref()))
    }

    fn child(&mut self, view: Resource<LentView>, index: u32) -> wasmtime::Result<Option<String>> {
        let lent = self.lent(&view)?;
        Ok(usize::try_from(index)
            .ok()
            .and_then(|index| lent.view.children.get(index))
            .cloned())
    }

    fn drop(&mut self, view: Resource<LentView>) -> wasmtime::Result<()> {
        self.table_mut().delete(view)?;
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use serde_json::json;

    use super::*;

    #[test]
    fn summaries_say_which_children_contain_the_expected_object() {
        let view = WorldView::from_json(
            &json!({"metadata": {"name": "s"}}),
            &[
                json!({"apiVersion": "v1", "kind": "ConfigMap", "metadata": {"name": "s-0"}, "data": {"a": "1"}}),
                json!({"apiVersion": "v1", "kind": "ConfigMap", "metadata": {"name": "s-1"}, "data": {"a": "2"}}),
            ],
            &json!({}),
        );
        let lent = LentView::new(view);
        let summaries = lent.summaries(Some(r#"{"data":{"a":"1"}}"#)).unwrap();
        assert_eq!(summaries.len(), 2);
        assert_eq!((summaries[0].name.as_str(), summaries[0].contains), ("s-0", true));
        assert_eq!((summaries[1].name.as_str(), summaries[1].contains), ("s-1", false));
        assert_eq!(summaries[1].kind, "ConfigMap");
        assert!(!lent.summaries(None).unwrap()[0].contains);
        assert_eq!(
            lent.summaries(Some("[1]")).unwrap_err(),
            "`expected` must be a JSON object"
        );
        assert!(
            lent.summaries(Some("{"))
                .unwrap_err()
                .starts_with("`expected` is not valid JSON")
        );
    }
}
