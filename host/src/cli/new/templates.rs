//! The project templates of each language, embedded in the binary, and the `{{key}}` substitution that fills them.

use super::Language;

/// A file of a project template: where it goes in the project, and its text.
#[derive(Debug, Clone, Copy)]
pub struct Template {
    /// Path inside the project.
    pub path: &'static str,
    /// The text, with `{{key}}` placeholders.
    pub text: &'static str,
}

macro_rules! template {
    ($path:literal, $source:literal) => {
        Template {
            path: $path,
            text: include_str!(concat!("../../../templates/plugin/", $source)),
        }
    };
}

const RUST: &[Template] = &[
    template!("Cargo.toml", "rust/Cargo.toml.in"),
    template!("src/lib.rs", "rust/src/lib.rs"),
    template!("src/tests.rs", "rust/src/tests.rs"),
    template!("Makefile", "rust/Makefile"),
    template!("README.md", "rust/README.md"),
    template!(".gitignore", "rust/gitignore"),
];

const PYTHON: &[Template] = &[
    template!("app.py", "python/app.py"),
    template!("tests/test_app.py", "python/tests/test_app.py"),
    template!("requirements.txt", "python/requirements.txt"),
    template!("pyproject.toml", "python/pyproject.toml"),
    template!("Makefile", "python/Makefile"),
    template!("README.md", "python/README.md"),
    template!(".gitignore", "python/gitignore"),
];

const TYPESCRIPT: &[Template] = &[
    template!("package.json", "typescript/package.json"),
    template!("tsconfig.json", "typescript/tsconfig.json"),
    template!("src/index.ts", "typescript/src/index.ts"),
    template!("test/reconciler.test.ts", "typescript/test/reconciler.test.ts"),
    template!("Makefile", "typescript/Makefile"),
    template!("README.md", "typescript/README.md"),
    template!(".gitignore", "typescript/gitignore"),
];

/// The Makefile target every language shares: render each fixture and compare it with its expected outcome.
pub const CHECK_TARGET: &str = include_str!("../../../templates/plugin/common/check.mk");
/// The README section every language shares: running the plugin under `wasm-reconciler dev`, adding a fixture.
pub const RUN_SECTION: &str = include_str!("../../../templates/plugin/common/run.md");
/// The build tools a TypeScript project installs, as `package-lock.json` entries at the versions the repository's
/// TypeScript plugin is built and tested with.
pub const TYPESCRIPT_TOOLS_LOCK: &str = include_str!("../../../templates/plugin/typescript/tools.lock.json");

/// The templates of a language.
pub fn templates(language: Language) -> &'static [Template] {
    match language {
        Language::Rust => RUST,
        Language::Python => PYTHON,
        Language::Typescript => TYPESCRIPT,
    }
}

/// A placeholder a template uses and no value was given for (a mistake in the templates, not in the input).
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("template {template}: {problem}")]
pub struct TemplateError {
    /// The template.
    pub template: String,
    /// What is wrong.
    pub problem: String,
}

/// Replaces every `{{key}}` of `text` with its value in `values`.
pub fn render(template: &str, text: &str, values: &[(&str, String)]) -> Result<String, TemplateError> {
    let error = |problem: String| TemplateError {
        template: template.to_owned(),
        problem,
    };
    let mut rendered = String::with_capacity(text.len());
    let mut rest = text;
    while let Some(start) = rest.find("{{") {
        rendered.push_str(&rest[..start]);
        let after = &rest[start + 2..];
        let end = after.find("}}").ok_or_else(|| {
            error(format!(
                "`{{{{` without `}}}}` at byte {}",
                text.len() - rest.len() + start
            ))
        })?;
        let key = &after[..end];
        let (_, value) = values
            .iter()
            .find(|(name, _)| *name == key)
            .ok_or_else(|| error(format!("no value for placeholder `{key}`")))?;
        rendered.push_str(value);
        rest = &after[end + 2..];
    }
    rendered.push_str(rest);
    Ok(rendered)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn placeholders_are_replaced_and_unknown_ones_refused() {
        let values = [("name", "demo".to_owned()), ("kind", "Widget".to_owned())];
        assert_eq!(
            render("t", "{{kind}} {{name}}: {{name}}", &values).unwrap(),
            "Widget demo: demo"
        );
        assert_eq!(
            render("t", "no placeholders { }", &values).unwrap(),
            "no placeholders { }"
        );
        let unknown = render("t", "{{group}}", &values).unwrap_err();
        assert_eq!(unknown.problem, "no value for placeholder `group`");
        let unclosed = render("t", "a {{name", &values).unwrap_err();
        assert_eq!(unclosed.problem, "`{{` without `}}` at byte 2");
    }
}
