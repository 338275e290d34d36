//! CEL cost: the static estimate a CRD's rules are held to when the CRD is written, and an estimate of a rule's
//! cost on actual data for the per-object runtime budget, following the shape of cel-go's cost model (one unit per
//! identifier, selection and call; strings traversed at 0.1 per byte; comprehensions by the size of their range).
//!
//! Unbounded lists, maps and strings are sized from the largest request body (3 MiB) and the smallest element, as
//! kube-apiserver does, so a rule that iterates an unbounded list inside another is refused here as there.

use kube_cel::cel::Value as CelValue;
use kube_cel::cel::common::ast::{Expr, IdedExpr, LiteralValue};

use crate::schema::{AdditionalProperties, Structural};

/// The largest request body kube-apiserver accepts (`MaxRequestSizeBytes`).
const MAX_REQUEST_SIZE_BYTES: u64 = 3 * 1024 * 1024;
/// Per-expression limit of the static estimate (`StaticEstimatedCostLimit`).
pub(crate) const STATIC_ESTIMATED_COST_LIMIT: u64 = 10_000_000;
/// Limit of all static estimates of a CRD schema together (`StaticEstimatedCRDCostLimit`).
pub(crate) const STATIC_ESTIMATED_CRD_COST_LIMIT: u64 = 100_000_000;
/// The runtime budget of all rules evaluated on one object (`RuntimeCELCostBudget`).
pub(crate) const RUNTIME_COST_BUDGET: i64 = 10_000_000;
/// The runtime limit of one rule evaluation (`PerCallLimit`).
pub(crate) const PER_CALL_LIMIT: u64 = 1_000_000;
/// cel-go's cost of traversing one byte of a string.
const STRING_TRAVERSAL_FACTOR: f64 = 0.1;

/// The smallest JSON text of a value of this schema (`estimateMinSizeJSON`).
fn min_json_size(schema: &Structural) -> u64 {
    match schema.type_name.as_deref() {
        Some("string") => 2,
        Some("array" | "object") => 2,
        _ => 1,
    }
}

/// The largest number of items, properties or bytes a value of this schema can have.
pub(crate) fn max_size(schema: &Structural) -> u64 {
    match schema.type_name.as_deref() {
        Some("array") => match schema.max_items {
            Some(max) => max.max(0) as u64,
            None => {
                let item = schema.items.as_deref().map(min_json_size).unwrap_or(1);
                (MAX_REQUEST_SIZE_BYTES - 2) / (item + 1)
            }
        },
        Some("object") => match schema.max_properties {
            Some(max) => max.max(0) as u64,
            None => {
                let value = match &schema.additional_properties {
                    Some(AdditionalProperties::Schema(values)) => min_json_size(values),
                    _ => 1,
                };
                (MAX_REQUEST_SIZE_BYTES - 2) / (value + 4)
            }
        },
        Some("string") => match schema.max_length {
            // maxLength counts characters; a character is at most 4 bytes.
            Some(max) => max.max(0) as u64 * 4,
            None => MAX_REQUEST_SIZE_BYTES - 2,
        },
        _ => 1,
    }
}

/// The element schema a comprehension over a value of this schema binds.
fn element_schema(schema: &Structural) -> Option<&Structural> {
    match schema.type_name.as_deref() {
        Some("array") => schema.items.as_deref(),
        Some("object") => schema.additional_properties_schema(),
        _ => None,
    }
}

/// Estimates an expression's cost; `scope` gives the schema of each variable whose schema is known.
pub(crate) fn estimate(expression: &IdedExpr, scope: &[(&str, Option<&Structural>)]) -> u64 {
    Estimator { sizes: None }.walk(expression, scope).cost
}

/// Estimates an expression's cost on actual data: comprehension ranges and strings that depend only on `self` and
/// `oldSelf` are measured in `actual` (their values), the rest bounded by the schema.
pub(crate) fn estimate_actual(
    expression: &IdedExpr,
    scope: &[(&str, Option<&Structural>)],
    actual: &[(&str, &CelValue)],
) -> u64 {
    Estimator { sizes: Some(actual) }.walk(expression, scope).cost
}

struct Estimator<'v> {
    sizes: Option<&'v [(&'v str, &'v CelValue)]>,
}

impl Estimator<'_> {
    /// The size of a value reached from a variable by field selection only, when measured data is at hand.
    fn measured(&self, expression: &IdedExpr) -> Option<u64> {
        let sizes = self.sizes?;
        let mut path = Vec::new();
        let mut current = expression;
        loop {
            match &current.expr {
                Expr::Select(select) if !select.test => {
                    path.push(select.field.as_str());
                    current = &select.operand;
                }
                Expr::Ident(name) => {
                    let &(_, mut value) = sizes.iter().find(|(variable, _)| variable == name)?;
                    for field in path.iter().rev() {
                        match value {
                            CelValue::Map(map) => {
                                value = map.map.get(&kube_cel::cel::objects::Key::String(std::sync::Arc::new(
                                    (*field).to_string(),
                                )))?;
                            }
                            _ => return None,
                        }
                    }
                    return match value {
                        CelValue::List(items) => Some(items.len() as u64),
                        CelValue::Map(map) => Some(map.map.len() as u64),
                        CelValue::String(text) => Some(text.len() as u64),
                        CelValue::Bytes(bytes) => Some(bytes.len() as u64),
                        _ => Some(1),
                    };
                }
                _ => return None,
            }
        }
    }

    /// Returns the cost and what is known of the expression's value.
    fn walk<'s>(&self, expression: &IdedExpr, scope: &[(&str, Option<&'s Structural>)]) -> Estimate<'s> {
        match &expression.expr {
            Expr::Literal(LiteralValue::String(text)) => Estimate {
                cost: 0,
                schema: None,
                size: text.len() as u64,
                string: true,
            },
            Expr::Literal(_) => Estimate::scalar(0),
            Expr::Ident(name) => {
                let schema = scope.iter().rev().find(|(n, _)| n == name).and_then(|(_, s)| *s);
                Estimate::of(1, schema)
            }
            Expr::Select(select) => {
                let operand = self.walk(&select.operand, scope);
                if select.test {
                    return Estimate::scalar(operand.cost.saturating_add(1));
                }
                let field = operand.schema.and_then(|s| {
                    s.properties
                        .iter()
                        .find(|(name, _)| super::values::escape(name).as_deref() == Some(select.field.as_str()))
                        .map(|(_, property)| property)
                        .or_else(|| s.additional_properties_schema())
                });
                Estimate::of(operand.cost.saturating_add(1), field)
            }
            Expr::Call(call) => {
                let mut cost = 1u64;
                let mut operands = Vec::new();
                let mut measured = None;
                if let Some(target) = &call.target {
                    let estimate = self.walk(target, scope);
                    cost = cost.saturating_add(estimate.cost);
                    measured = self.measured(target);
                    operands.push(estimate);
                }
                for (index, arg) in call.args.iter().enumerate() {
                    let estimate = self.walk(arg, scope);
                    cost = cost.saturating_add(estimate.cost);
                    if index == 0 && call.target.is_none() {
                        measured = self.measured(arg);
                    }
                    operands.push(estimate);
                }
                let subject = operands.first().copied();
                let size = measured.or(subject.map(|s| s.size));
                let traversal = |size: u64| {
                    if size == UNKNOWN_SIZE {
                        UNKNOWN_SIZE
                    } else {
                        (size as f64 * STRING_TRAVERSAL_FACTOR).ceil() as u64
                    }
                };
                let string_operands = operands.iter().any(|o| o.string);
                match call.func_name.as_str() {
                    "_+_" if string_operands => {
                        let joined = operands.iter().fold(0u64, |total, o| total.saturating_add(o.size));
                        return Estimate {
                            cost: cost.saturating_add(traversal(joined)),
                            schema: None,
                            size: joined,
                            string: true,
                        };
                    }
                    "string" | "format" => {
                        // cel-go knows no bound for the text these produce.
                        return Estimate {
                            cost,
                            schema: None,
                            size: UNKNOWN_SIZE,
                            string: true,
                        };
                    }
                    "lowerAscii" | "upperAscii" | "trim" | "substring" | "replace" | "join" => {
                        return Estimate {
                            cost: cost.saturating_add(size.map(traversal).unwrap_or(0)),
                            schema: None,
                            size: size.unwrap_or(UNKNOWN_SIZE),
                            string: true,
                        };
                    }
                    "matches" | "startsWith" | "endsWith" | "contains" | "indexOf" | "lastIndexOf" | "split"
                    | "find" | "findAll" => cost = cost.saturating_add(size.map(traversal).unwrap_or(0)),
                    "_==_" | "_!=_" if string_operands => cost = cost.saturating_add(size.map(traversal).unwrap_or(0)),
                    "_==_" | "_!=_" | "_+_" | "@in"
                        if subject
                            .and_then(|s| s.schema)
                            .is_some_and(|s| matches!(s.type_name.as_deref(), Some("array" | "object"))) =>
                    {
                        cost = cost.saturating_add(size.unwrap_or(0));
                    }
                    "_[_]" => {
                        return Estimate::of(cost, subject.and_then(|s| s.schema).and_then(element_schema));
                    }
                    _ => {}
                }
                Estimate::scalar(cost)
            }
            Expr::Comprehension(comprehension) => {
                let range = self.walk(&comprehension.iter_range, scope);
                let size = self
                    .measured(&comprehension.iter_range)
                    .or_else(|| range.schema.map(max_size))
                    .unwrap_or(1);
                let element = range.schema.and_then(|schema| match schema.type_name.as_deref() {
                    Some("array") => schema.items.as_deref(),
                    _ => None,
                });
                let mut inner: Vec<(&str, Option<&'s Structural>)> = scope.to_vec();
                inner.push((comprehension.iter_var.as_str(), element));
                if let Some(second) = &comprehension.iter_var2 {
                    inner.push((second.as_str(), range.schema.and_then(element_schema)));
                }
                inner.push((comprehension.accu_var.as_str(), None));
                let init = self.walk(&comprehension.accu_init, &inner).cost;
                let condition = self.walk(&comprehension.loop_cond, &inner).cost;
                let step = self.walk(&comprehension.loop_step, &inner).cost;
                let result = self.walk(&comprehension.result, &inner).cost;
                let per_item = condition.saturating_add(step);
                Estimate::scalar(
                    range
                        .cost
                        .saturating_add(init)
                        .saturating_add(size.saturating_mul(per_item))
                        .saturating_add(result),
                )
            }
            Expr::List(list) => Estimate::scalar(
                list.elements
                    .iter()
                    .map(|e| self.walk(e, scope).cost)
                    .fold(1u64, u64::saturating_add),
            ),
            Expr::Map(map) => {
                let mut cost = 1u64;
                for entry in &map.entries {
                    if let kube_cel::cel::common::ast::EntryExpr::MapEntry(entry) = &entry.expr {
                        cost = cost
                            .saturating_add(self.walk(&entry.key, scope).cost)
                            .saturating_add(self.walk(&entry.value, scope).cost);
                    }
                }
                Estimate::scalar(cost)
            }
            Expr::Struct(_) | Expr::Unspecified => Estimate::scalar(1),
        }
    }
}

/// The size cel-go gives a value it has no bound for.
const UNKNOWN_SIZE: u64 = u64::MAX;

/// What the estimate knows of an expression: its cost, its schema, the largest size of its value (bytes of a
/// string, items of a list) and whether it is a string.
#[derive(Debug, Clone, Copy)]
struct Estimate<'s> {
    cost: u64,
    schema: Option<&'s Structural>,
    size: u64,
    string: bool,
}

impl<'s> Estimate<'s> {
    fn scalar(cost: u64) -> Self {
        Estimate {
            cost,
            schema: None,
            size: 1,
            string: false,
        }
    }

    fn of(cost: u64, schema: Option<&'s Structural>) -> Self {
        Estimate {
            cost,
            schema,
            size: schema.map(max_size).unwrap_or(1),
            string: schema.is_some_and(|s| s.type_name.as_deref() == Some("string")),
        }
    }
}

/// `getCostErrorMessage`.
pub(crate) fn cost_error_message(cost_name: &str, cost: u64, limit: u64) -> String {
    let factor = cost as f64 / limit as f64;
    let factor = if factor > 100.0 {
        "more than 100x".to_string()
    } else if factor < 1.5 {
        format!("{factor:.6}x")
    } else {
        format!("{factor:.1}x")
    };
    format!(
        "{cost_name} exceeds budget by factor of {factor} (try simplifying the rule, or adding maxItems, maxProperties, \
         and maxLength where arrays, maps, and strings are declared)"
    )
}

#[cfg(test)]
mod tests {
    use super::*;
    use kube_cel::cel::Program;
    use serde_json::json;

    fn cost_of(schema: serde_json::Value, rule: &str) -> u64 {
        let root = Structural::from_openapi_v3(&json!({"type": "object", "properties": {"list": schema}}))
            .expect("structural");
        let list = root.property("list").expect("list");
        let program = Program::compile(rule).expect("parses");
        estimate(program.expression(), &[("self", Some(list))])
    }

    #[test]
    fn nested_iteration_of_unbounded_lists_is_far_over_budget() {
        let schema = json!({"type": "array", "items": {"type": "string"}});
        let cost = cost_of(schema.clone(), "self.all(x, self.all(y, x == y))");
        assert!(cost > 100 * STATIC_ESTIMATED_COST_LIMIT, "{cost}");
        assert!(cost_of(schema, "self.size() < 5") < 10);
        let bounded = json!({"type": "array", "maxItems": 10, "items": {"type": "string", "maxLength": 8}});
        assert!(cost_of(bounded, "self.all(x, self.all(y, x == y))") < 2_000);
        // Text of unknown length (string()) concatenated is unbounded, as in cel-go.
        let numbers = json!({"type": "array", "maxItems": 1, "items": {"type": "integer"}});
        assert!(cost_of(numbers.clone(), "'n ' + string(self.size())") > 100 * STATIC_ESTIMATED_COST_LIMIT);
        assert!(cost_of(numbers, "'n ' + 'm'") < 10);
    }

    #[test]
    fn cost_messages_read_like_kubernetes() {
        assert_eq!(
            cost_error_message("estimated rule cost", 2_000_000_000, STATIC_ESTIMATED_COST_LIMIT),
            "estimated rule cost exceeds budget by factor of more than 100x (try simplifying the rule, or adding \
             maxItems, maxProperties, and maxLength where arrays, maps, and strings are declared)"
        );
        assert!(cost_error_message("x", 25_000_000, STATIC_ESTIMATED_COST_LIMIT).contains("factor of 2.5x"));
        assert!(cost_error_message("x", 12_000_000, STATIC_ESTIMATED_COST_LIMIT).contains("factor of 1.200000x"));
    }
}
