//! The part of CEL's type checker that CRD authors meet: undeclared references, undefined fields of the schema's
//! object types, and a rule that cannot evaluate to a bool — with cel-go's wording and source positions.
//!
//! The `cel` crate parses and evaluates but does not type-check; kube-apiserver compiles rules against a type built
//! from the schema and refuses the CRD on these errors. Anything this pass cannot type is `dyn` and passes.

use std::collections::HashMap;

use kube_cel::cel::common::ast::{Expr, IdedExpr, LiteralValue};

use super::values::escape;
use crate::schema::{AdditionalProperties, Structural};

/// A CEL type as far as this pass follows it.
#[derive(Debug, Clone)]
pub(crate) enum CelType<'s> {
    Bool,
    Int,
    Uint,
    Double,
    String,
    Bytes,
    Timestamp,
    Duration,
    Null,
    List(Box<CelType<'s>>),
    Map(Box<CelType<'s>>),
    /// An object with declared properties; `root` adds `apiVersion`, `kind` and the restricted `metadata`.
    Object {
        schema: &'s Structural,
        root: bool,
    },
    /// The `metadata` of the root: only `name` and `generateName`.
    RootMetadata,
    Dyn,
}

impl CelType<'_> {
    fn name(&self) -> &'static str {
        match self {
            CelType::Bool => "bool",
            CelType::Int => "int",
            CelType::Uint => "uint",
            CelType::Double => "double",
            CelType::String => "string",
            CelType::Bytes => "bytes",
            CelType::Timestamp => "google.protobuf.Timestamp",
            CelType::Duration => "google.protobuf.Duration",
            CelType::Null => "null_type",
            CelType::List(_) => "list",
            CelType::Map(_) | CelType::Object { .. } | CelType::RootMetadata => "map",
            CelType::Dyn => "dyn",
        }
    }
}

/// The CEL type of values under `schema` (`model.SchemaDeclType`).
pub(crate) fn schema_type(schema: &Structural, root: bool) -> CelType<'_> {
    if schema.int_or_string {
        return CelType::Dyn;
    }
    match schema.type_name.as_deref() {
        Some("boolean") => CelType::Bool,
        Some("integer") => CelType::Int,
        Some("number") => CelType::Double,
        Some("string") => match schema.format.as_deref() {
            Some("byte") => CelType::Bytes,
            Some("duration") => CelType::Duration,
            Some("date" | "date-time") => CelType::Timestamp,
            _ => CelType::String,
        },
        Some("array") => match &schema.items {
            Some(items) => CelType::List(Box::new(schema_type(items, items.embedded_resource))),
            None => CelType::List(Box::new(CelType::Dyn)),
        },
        Some("object") => {
            if schema.preserve_unknown_fields || schema.embedded_resource {
                return CelType::Dyn;
            }
            match &schema.additional_properties {
                Some(AdditionalProperties::Schema(values)) if schema.properties.is_empty() => {
                    CelType::Map(Box::new(schema_type(values, values.embedded_resource)))
                }
                Some(AdditionalProperties::Allows(true)) if schema.properties.is_empty() => {
                    CelType::Map(Box::new(CelType::Dyn))
                }
                _ => CelType::Object { schema, root },
            }
        }
        _ => CelType::Dyn,
    }
}

/// One checker error, at a byte offset of the source.
#[derive(Debug)]
struct Issue {
    offset: usize,
    message: String,
}

/// The checker's verdict on a rule: None when it type-checks, else cel-go's `issues.String()`.
pub(crate) fn check(source: &str, expression: &IdedExpr, self_type: CelType<'_>, expect: Expected) -> Option<String> {
    let mut checker = Checker {
        source,
        issues: Vec::new(),
        searched_from: HashMap::new(),
    };
    let mut scope: HashMap<String, CelType<'_>> = HashMap::new();
    scope.insert("self".into(), self_type.clone());
    scope.insert("oldSelf".into(), self_type);
    let result = checker.walk(expression, &scope);
    if !checker.issues.is_empty() {
        checker.issues.sort_by_key(|issue| issue.offset);
        let rendered: Vec<String> = checker.issues.iter().map(|issue| render(source, issue)).collect();
        return Some(rendered.join("\n"));
    }
    match (expect, &result) {
        (_, CelType::Dyn) => None,
        (Expected::Bool, CelType::Bool) | (Expected::String, CelType::String) => None,
        _ => Some(String::new()),
    }
}

/// What a rule (bool) or a `messageExpression` (string) must evaluate to.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Expected {
    Bool,
    String,
}

/// cel-go's error line: `ERROR: <input>:line:column: message`, the source line and a caret under the column.
fn render(source: &str, issue: &Issue) -> String {
    let before = &source[..issue.offset.min(source.len())];
    let line = before.matches('\n').count() + 1;
    let line_start = before.rfind('\n').map(|i| i + 1).unwrap_or(0);
    let column = before[line_start..].chars().count();
    let text = source[line_start..].lines().next().unwrap_or_default();
    format!(
        "ERROR: <input>:{line}:{}: {}\n | {text}\n | {}^",
        column + 1,
        issue.message,
        ".".repeat(column)
    )
}

struct Checker<'a> {
    source: &'a str,
    issues: Vec<Issue>,
    /// Where the next search for a token starts, so repeated names map to successive occurrences.
    searched_from: HashMap<String, usize>,
}

/// Type names CEL declares as identifiers.
const TYPE_IDENTIFIERS: [&str; 11] = [
    "bool",
    "int",
    "uint",
    "double",
    "string",
    "bytes",
    "list",
    "map",
    "null_type",
    "type",
    "optional_type",
];

/// Qualifiers of the library functions (`math.ceil`, `optional.none`, `sets.contains`, …), which are not variables.
const FUNCTION_NAMESPACES: [&str; 8] = [
    "optional", "math", "sets", "strings", "lists", "base64", "format", "cel",
];

impl<'s> Checker<'_> {
    /// The offset of the next occurrence of `token` as a whole word (after a `.` when `after_dot`).
    fn locate(&mut self, token: &str, after_dot: bool) -> usize {
        let key = format!("{after_dot}{token}");
        let start = self.searched_from.get(&key).copied().unwrap_or(0);
        let bytes = self.source.as_bytes();
        let is_word = |b: u8| b.is_ascii_alphanumeric() || b == b'_';
        let mut from = start;
        while let Some(found) = self.source.get(from..).and_then(|rest| rest.find(token)) {
            let at = from + found;
            let end = at + token.len();
            let word_before = at > 0 && is_word(bytes[at - 1]);
            let word_after = end < bytes.len() && is_word(bytes[end]);
            if !word_before && !word_after {
                let mut dot = at;
                while dot > 0 && bytes[dot - 1].is_ascii_whitespace() {
                    dot -= 1;
                }
                let preceded_by_dot = dot > 0 && bytes[dot - 1] == b'.';
                if after_dot && preceded_by_dot {
                    self.searched_from.insert(key, end);
                    return dot - 1;
                }
                if !after_dot && !preceded_by_dot {
                    self.searched_from.insert(key, end);
                    return at;
                }
            }
            from = end;
        }
        start
    }

    fn walk(&mut self, expression: &IdedExpr, scope: &HashMap<String, CelType<'s>>) -> CelType<'s> {
        match &expression.expr {
            Expr::Literal(literal) => match literal {
                LiteralValue::Boolean(_) => CelType::Bool,
                LiteralValue::Int(_) => CelType::Int,
                LiteralValue::UInt(_) => CelType::Uint,
                LiteralValue::Double(_) => CelType::Double,
                LiteralValue::String(_) => CelType::String,
                LiteralValue::Bytes(_) => CelType::Bytes,
                LiteralValue::Null => CelType::Null,
            },
            Expr::Ident(name) => {
                if let Some(found) = scope.get(name) {
                    return found.clone();
                }
                if !TYPE_IDENTIFIERS.contains(&name.as_str()) && !name.starts_with('@') {
                    let offset = self.locate(name, false);
                    self.issues.push(Issue {
                        offset,
                        message: format!("undeclared reference to '{name}' (in container '')"),
                    });
                }
                CelType::Dyn
            }
            Expr::Select(select) => {
                let operand = self.walk(&select.operand, scope);
                let field = select.field.as_str();
                let field_type = match operand {
                    CelType::Object { schema, root } => match field {
                        "apiVersion" | "kind" if root => Some(CelType::String),
                        "metadata" if root => Some(CelType::RootMetadata),
                        _ => schema
                            .properties
                            .iter()
                            .find(|(name, _)| escape(name).as_deref() == Some(field))
                            .map(|(_, property)| schema_type(property, property.embedded_resource)),
                    },
                    CelType::RootMetadata => match field {
                        "name" | "generateName" => Some(CelType::String),
                        _ => None,
                    },
                    CelType::Map(values) => Some(*values),
                    _ => Some(CelType::Dyn),
                };
                let field_type = field_type.unwrap_or_else(|| {
                    let offset = self.locate(field, true);
                    self.issues.push(Issue {
                        offset,
                        message: format!("undefined field '{field}'"),
                    });
                    CelType::Dyn
                });
                if select.test { CelType::Bool } else { field_type }
            }
            Expr::Call(call) => {
                let namespaced = call
                    .target
                    .as_ref()
                    .is_some_and(|target| matches!(&target.expr, Expr::Ident(name) if FUNCTION_NAMESPACES.contains(&name.as_str()) && !scope.contains_key(name)));
                if let Some(target) = call.target.as_ref().filter(|_| !namespaced) {
                    self.walk(target, scope);
                }
                let args: Vec<CelType<'s>> = call.args.iter().map(|arg| self.walk(arg, scope)).collect();
                call_type(&call.func_name, &args)
            }
            Expr::Comprehension(comprehension) => {
                let range = self.walk(&comprehension.iter_range, scope);
                let is_list = matches!(range, CelType::List(_));
                let (first, second) = match range {
                    CelType::List(element) => (CelType::Int, *element),
                    CelType::Map(values) => (CelType::String, *values),
                    CelType::Object { .. } | CelType::RootMetadata => (CelType::String, CelType::Dyn),
                    _ => (CelType::Dyn, CelType::Dyn),
                };
                let mut inner = scope.clone();
                match &comprehension.iter_var2 {
                    Some(second_var) => {
                        inner.insert(comprehension.iter_var.clone(), first);
                        inner.insert(second_var.clone(), second);
                    }
                    None => {
                        inner.insert(comprehension.iter_var.clone(), if is_list { second } else { first });
                    }
                }
                let accumulator = self.walk(&comprehension.accu_init, &inner);
                inner.insert(comprehension.accu_var.clone(), accumulator);
                self.walk(&comprehension.loop_cond, &inner);
                self.walk(&comprehension.loop_step, &inner);
                self.walk(&comprehension.result, &inner)
            }
            Expr::List(list) => {
                let elements: Vec<CelType<'s>> = list.elements.iter().map(|e| self.walk(e, scope)).collect();
                CelType::List(Box::new(elements.into_iter().next().unwrap_or(CelType::Dyn)))
            }
            Expr::Map(map) => {
                for entry in &map.entries {
                    if let kube_cel::cel::common::ast::EntryExpr::MapEntry(entry) = &entry.expr {
                        self.walk(&entry.key, scope);
                        self.walk(&entry.value, scope);
                    }
                }
                CelType::Map(Box::new(CelType::Dyn))
            }
            Expr::Struct(_) | Expr::Unspecified => CelType::Dyn,
        }
    }
}

/// The result type of a function or operator, as far as it matters for the bool/string check.
fn call_type<'s>(function: &str, args: &[CelType<'s>]) -> CelType<'s> {
    match function {
        "_==_"
        | "_!=_"
        | "_<_"
        | "_<=_"
        | "_>_"
        | "_>=_"
        | "_&&_"
        | "_||_"
        | "!_"
        | "@in"
        | "@not_strictly_false"
        | "matches"
        | "startsWith"
        | "endsWith"
        | "contains"
        | "exists"
        | "all"
        | "exists_one"
        | "isSorted"
        | "hasValue" => CelType::Bool,
        "size" => CelType::Int,
        "int" => CelType::Int,
        "uint" => CelType::Uint,
        "double" => CelType::Double,
        "string" | "lowerAscii" | "upperAscii" | "trim" | "replace" | "substring" | "join" | "format" => {
            CelType::String
        }
        "_+_" | "_-_" | "_*_" | "_/_" | "_%_" => match (args.first(), args.get(1)) {
            (Some(left @ (CelType::Int | CelType::Uint | CelType::Double | CelType::String)), Some(right))
                if left.name() == right.name() =>
            {
                left.clone()
            }
            (Some(CelType::List(element)), Some(CelType::List(_))) => CelType::List(element.clone()),
            _ => CelType::Dyn,
        },
        "-_" => args.first().cloned().unwrap_or(CelType::Dyn),
        "_?_:_" => match (args.get(1), args.get(2)) {
            (Some(left), Some(right)) if left.name() == right.name() => left.clone(),
            _ => CelType::Dyn,
        },
        "_[_]" => match args.first() {
            Some(CelType::List(element)) => (**element).clone(),
            Some(CelType::Map(values)) => (**values).clone(),
            _ => CelType::Dyn,
        },
        _ => CelType::Dyn,
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use kube_cel::cel::Program;
    use serde_json::json;

    fn check_rule(schema: serde_json::Value, rule: &str) -> Option<String> {
        let structural = Structural::from_openapi_v3(&schema).expect("structural");
        let program = Program::compile(rule).expect("parses");
        check(
            rule,
            program.expression(),
            schema_type(&structural, true),
            Expected::Bool,
        )
    }

    fn spec_schema() -> serde_json::Value {
        json!({"type": "object", "properties": {
            "spec": {"type": "object", "properties": {
                "size": {"type": "integer"}, "max": {"type": "integer"},
                "items": {"type": "array", "items": {"type": "string"}},
                "labels": {"type": "object", "additionalProperties": {"type": "string"}}
            }}
        }})
    }

    #[test]
    fn accepts_rules_over_declared_fields() {
        for rule in [
            "self.spec.size <= self.spec.max",
            "has(self.spec.size)",
            "self.spec.items.all(i, i.size() < 10)",
            "self.spec.labels.all(k, self.spec.labels[k] != '')",
            "self.metadata.name.startsWith('a')",
            "self.spec.items.map(i, i + 'x').size() > 0",
            "math.abs(self.spec.size) < 10",
            "sets.contains(self.spec.items, ['a'])",
            "optional.none().orValue(1) == 1",
        ] {
            assert_eq!(check_rule(spec_schema(), rule), None, "{rule}");
        }
    }

    #[test]
    fn refuses_what_cel_go_refuses() {
        assert_eq!(
            check_rule(spec_schema(), "self.spec.sise > 1").as_deref(),
            Some("ERROR: <input>:1:10: undefined field 'sise'\n | self.spec.sise > 1\n | .........^")
        );
        assert_eq!(
            check_rule(spec_schema(), "foo == 1").as_deref(),
            Some("ERROR: <input>:1:1: undeclared reference to 'foo' (in container '')\n | foo == 1\n | ^")
        );
        assert_eq!(check_rule(spec_schema(), "self.spec.size + 1").as_deref(), Some(""));
        assert_eq!(
            check_rule(spec_schema(), "self.metadata.namespace == 'x'").as_deref(),
            Some(
                "ERROR: <input>:1:14: undefined field 'namespace'\n | self.metadata.namespace == 'x'\n | .............^"
            )
        );
    }
}
