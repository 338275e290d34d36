//! CEL `x-kubernetes-validations`: compiled when a CRD is written (refused as kube-apiserver refuses it), then
//! evaluated on every write of a custom object at every schema level, with transition rules (`oldSelf`),
//! `messageExpression`, `reason`, `fieldPath`, ratcheting of unchanged values, and the runtime cost budget.
//!
//! Expressions are parsed and run by the `cel` interpreter with the Kubernetes CEL libraries of `kube-cel`; this
//! module adds what kube-apiserver's `apiextensions-apiserver/pkg/apiserver/schema/cel` adds around cel-go: the
//! values under the schema (`values`), the checks of its type checker that authors meet (`check`), the cost model
//! (`cost`), and the field errors with the server's words.

mod check;
mod cost;
mod values;

use std::sync::Arc;

use kube_cel::KubeCelExt as _;
use kube_cel::cel::objects::OptionalValue;
use kube_cel::cel::{Context, ExecutionError, Program, Value as CelValue};
use serde_json::Value;

use super::field_error::{FieldError, FieldErrorKind, FieldPath};
use super::{AdditionalProperties, Structural};
use crate::go_format;
use check::{Expected, schema_type};

/// The reasons a rule may name.
const REASONS: [&str; 4] = [
    "FieldValueDuplicate",
    "FieldValueForbidden",
    "FieldValueInvalid",
    "FieldValueRequired",
];
/// The longest message a `messageExpression` may produce (`MaxEvaluatedMessageExpressionSizeBytes`).
const MAX_MESSAGE_EXPRESSION_BYTES: usize = 5 * 1024;

/// The message added instead of evaluating rules when the object already has errors that make rules meaningless.
pub const RULES_NOT_CHECKED: &str = "some validation rules were not checked because the object was invalid; correct the existing errors to complete validation";

/// One compiled `x-kubernetes-validations` entry.
#[derive(Debug)]
pub struct CompiledRule {
    rule: String,
    message: String,
    reason: Option<String>,
    /// The rule's `fieldPath`, as a field path relative to the node (`spec.replicas`, `labels[a]`).
    field_path: Option<String>,
    optional_old_self: bool,
    uses_old_self: bool,
    program: Program,
    message_program: Option<(String, Program)>,
}

/// A rule entry as written in the schema.
struct RuleSpec {
    rule: String,
    message: String,
    message_expression: String,
    reason: Option<String>,
    field_path: String,
    optional_old_self: Option<bool>,
}

impl RuleSpec {
    fn read(entry: &Value) -> RuleSpec {
        let text = |key: &str| entry.get(key).and_then(Value::as_str).unwrap_or_default().to_string();
        RuleSpec {
            rule: text("rule"),
            message: text("message"),
            message_expression: text("messageExpression"),
            reason: entry.get("reason").and_then(Value::as_str).map(str::to_string),
            field_path: text("fieldPath"),
            optional_old_self: entry.get("optionalOldSelf").and_then(Value::as_bool),
        }
    }

    /// The rule as `json.Marshal` prints the internal `apiextensions.ValidationRule` (no JSON tags: Go field names
    /// in declaration order), the value of compile errors.
    fn go_value(&self) -> String {
        let text = |value: &str| go_format::json_string(value);
        let reason = self.reason.as_deref().map(text).unwrap_or_else(|| "null".into());
        let optional = self
            .optional_old_self
            .map(|value| value.to_string())
            .unwrap_or_else(|| "null".into());
        format!(
            "{{\"Rule\":{},\"Message\":{},\"MessageExpression\":{},\"Reason\":{reason},\"FieldPath\":{},\"OptionalOldSelf\":{optional}}}",
            text(&self.rule),
            text(&self.message),
            text(&self.message_expression),
            text(&self.field_path),
        )
    }
}

/// An Invalid error whose value is printed as given (Go values that are not JSON).
fn invalid_raw(field: &FieldPath, value: &str, detail: &str) -> FieldError {
    FieldError {
        kind: FieldErrorKind::Invalid,
        field: field.to_string(),
        detail: format!("{value}: {detail}"),
        bad_value: None,
    }
}

/// cel-go's rendering of parse errors: one `ERROR: <input>:line:column: message` block per error.
fn parse_issues(source: &str, errors: &kube_cel::cel::ParseErrors) -> String {
    errors
        .errors
        .iter()
        .map(|error| {
            let (line, column) = error.pos;
            let text = source.lines().nth((line.max(1) - 1) as usize).unwrap_or_default();
            let dots = ".".repeat((column.max(1) - 1) as usize);
            format!("ERROR: <input>:{line}:{column}: {}\n | {text}\n | {dots}^", error.msg)
        })
        .collect::<Vec<_>>()
        .join("\n")
}

/// Compiles every rule of a CRD version's schema into `compiled_rules` of its nodes; returns what the CRD API
/// refuses (`schema_path` is where the schema is reported, e.g. `spec.validation.openAPIV3Schema`).
pub(crate) fn compile(root: &mut Structural, schema_path: &FieldPath) -> Vec<FieldError> {
    let mut compiler = Compiler {
        errors: Vec::new(),
        total: 0,
        most_expensive: Vec::new(),
    };
    compiler.node(root, None, schema_path, true, 1, None);
    if compiler.total > cost::STATIC_ESTIMATED_CRD_COST_LIMIT {
        for (path, _) in std::mem::take(&mut compiler.most_expensive) {
            compiler.errors.push(FieldError::forbidden(
                path,
                "contributed to estimated rule cost total exceeding cost limit for entire OpenAPIv3 schema",
            ));
        }
        compiler.errors.push(FieldError::forbidden(
            schema_path.to_string(),
            cost::cost_error_message(
                "x-kubernetes-validations estimated rule cost total for entire OpenAPIv3 schema",
                compiler.total,
                cost::STATIC_ESTIMATED_CRD_COST_LIMIT,
            ),
        ));
    }
    compiler.errors
}

struct Compiler {
    errors: Vec<FieldError>,
    total: u64,
    /// The (at most four) costliest expressions of at least 1% of the CRD limit, costliest first.
    most_expensive: Vec<(String, u64)>,
}

impl Compiler {
    /// `TotalCost.ObserveExpressionCost`.
    fn observe(&mut self, path: &FieldPath, cost: u64) {
        self.total = self.total.saturating_add(cost);
        if cost < cost::STATIC_ESTIMATED_CRD_COST_LIMIT / 100 {
            return;
        }
        self.most_expensive.push((path.to_string(), cost));
        self.most_expensive.sort_by_key(|entry| std::cmp::Reverse(entry.1));
        self.most_expensive.truncate(4);
    }

    /// Compiles `node`'s rules (typed as `type_node`, which differs for `allOf` branches) after its children's.
    fn node(
        &mut self,
        node: &mut Structural,
        type_node: Option<&Structural>,
        path: &FieldPath,
        root: bool,
        cardinality: u64,
        uncorrelatable: Option<&FieldPath>,
    ) {
        if type_node.is_none() {
            let map_correlatable = matches!(node.map_type.as_deref(), None | Some("granular" | "atomic"));
            let property_uncorrelatable = if map_correlatable {
                uncorrelatable
            } else {
                uncorrelatable.or(Some(path))
            };
            for (name, property) in &mut node.properties {
                let embedded = property.embedded_resource;
                self.node(
                    property,
                    None,
                    &path.child("properties").key(name),
                    embedded,
                    cardinality,
                    property_uncorrelatable,
                );
            }
            let size = cost::max_size(node);
            if let Some(AdditionalProperties::Schema(values)) = &mut node.additional_properties {
                let embedded = values.embedded_resource;
                self.node(
                    values,
                    None,
                    &path.child("additionalProperties"),
                    embedded,
                    cardinality.saturating_mul(size),
                    property_uncorrelatable,
                );
            }
            let item_uncorrelatable = if node.list_type.as_deref() == Some("map") {
                uncorrelatable
            } else {
                uncorrelatable.or(Some(path))
            };
            if let Some(items) = &mut node.items {
                let embedded = items.embedded_resource;
                self.node(
                    items,
                    None,
                    &path.child("items"),
                    embedded,
                    cardinality.saturating_mul(size),
                    item_uncorrelatable,
                );
            }
            let this = node.clone();
            for (index, branch) in node.all_of.iter_mut().enumerate() {
                self.node(
                    branch,
                    Some(&this),
                    &path.child("allOf").index(index),
                    root,
                    cardinality,
                    uncorrelatable,
                );
            }
        }
        let typed_as = type_node.unwrap_or(node);
        let compiled = self.rules(node, typed_as, path, root, cardinality, uncorrelatable);
        node.compiled_rules = compiled;
    }

    fn rules(
        &mut self,
        node: &Structural,
        typed_as: &Structural,
        path: &FieldPath,
        root: bool,
        cardinality: u64,
        uncorrelatable: Option<&FieldPath>,
    ) -> Vec<Arc<CompiledRule>> {
        let mut compiled = Vec::new();
        let mut field_path_errors = Vec::new();
        let mut specs = Vec::new();
        for (index, entry) in node.validations.iter().enumerate() {
            let spec = RuleSpec::read(entry);
            let rule_path = path.child("x-kubernetes-validations").index(index);
            let mut normalised_field_path = None;
            if !spec.field_path.is_empty() {
                let field_path_path = rule_path.child("fieldPath");
                let value = Value::String(spec.field_path.clone());
                if spec.field_path.trim().is_empty() {
                    field_path_errors.push(FieldError::invalid(
                        field_path_path,
                        value,
                        "must be non-empty if specified",
                    ));
                } else if spec.field_path.contains(['\n', '\r']) {
                    field_path_errors.push(FieldError::invalid(
                        field_path_path,
                        value,
                        "must not contain line breaks",
                    ));
                } else {
                    match valid_field_path(&spec.field_path, typed_as) {
                        Some(normalised) => normalised_field_path = Some(normalised),
                        None => {
                            field_path_errors.push(FieldError::invalid(field_path_path, value, "must be a valid path"))
                        }
                    }
                }
            }
            specs.push((index, spec, rule_path, normalised_field_path));
        }
        if !field_path_errors.is_empty() {
            // Schema errors at a level stop the CEL checks there, as on the real server.
            self.errors.extend(field_path_errors);
            return compiled;
        }
        for (_, spec, rule_path, field_path) in specs {
            if spec.rule.trim().is_empty() {
                continue;
            }
            let self_type = schema_type(typed_as, root);
            let scope = [("self", Some(typed_as)), ("oldSelf", Some(typed_as))];
            let program = match Program::compile(&spec.rule) {
                Ok(program) => program,
                Err(errors) => {
                    self.errors.push(invalid_raw(
                        &rule_path.child("rule"),
                        &spec.go_value(),
                        &format!("compilation failed: {}", parse_issues(&spec.rule, &errors)),
                    ));
                    continue;
                }
            };
            let expression_cost = cost::estimate(program.expression(), &scope).saturating_mul(cardinality);
            if expression_cost > cost::STATIC_ESTIMATED_COST_LIMIT {
                self.errors.push(FieldError::forbidden(
                    rule_path.child("rule"),
                    cost::cost_error_message(
                        "estimated rule cost",
                        expression_cost,
                        cost::STATIC_ESTIMATED_COST_LIMIT,
                    ),
                ));
            }
            self.observe(&rule_path.child("rule"), expression_cost);
            let mut failed = false;
            match check::check(&spec.rule, program.expression(), self_type.clone(), Expected::Bool) {
                None => {}
                Some(issues) if issues.is_empty() => {
                    failed = true;
                    self.errors.push(invalid_raw(
                        &rule_path.child("rule"),
                        &spec.go_value(),
                        "cel expression must evaluate to a bool",
                    ));
                }
                Some(issues) => {
                    failed = true;
                    self.errors.push(invalid_raw(
                        &rule_path.child("rule"),
                        &spec.go_value(),
                        &format!("compilation failed: {issues}"),
                    ));
                }
            }
            let mut message_program = None;
            if !spec.message_expression.trim().is_empty() {
                let expression_path = rule_path.child("messageExpression");
                match Program::compile(&spec.message_expression) {
                    Err(errors) => {
                        failed = true;
                        self.errors.push(invalid_raw(
                            &expression_path,
                            &spec.go_value(),
                            &format!(
                                "messageExpression compilation failed: {}",
                                parse_issues(&spec.message_expression, &errors)
                            ),
                        ));
                    }
                    Ok(message) => {
                        match check::check(
                            &spec.message_expression,
                            message.expression(),
                            self_type,
                            Expected::String,
                        ) {
                            None => {}
                            Some(issues) if issues.is_empty() => {
                                failed = true;
                                self.errors.push(invalid_raw(
                                    &expression_path,
                                    &spec.go_value(),
                                    "messageExpression must evaluate to a string",
                                ));
                            }
                            Some(issues) => {
                                failed = true;
                                self.errors.push(invalid_raw(
                                    &expression_path,
                                    &spec.go_value(),
                                    &format!("messageExpression compilation failed: {issues}"),
                                ));
                            }
                        }
                        let message_cost = cost::estimate(message.expression(), &scope).saturating_mul(cardinality);
                        if message_cost > cost::STATIC_ESTIMATED_COST_LIMIT {
                            self.errors.push(FieldError::forbidden(
                                expression_path.clone(),
                                cost::cost_error_message(
                                    "estimated messageExpression cost",
                                    message_cost,
                                    cost::STATIC_ESTIMATED_COST_LIMIT,
                                ),
                            ));
                        }
                        self.observe(&expression_path, message_cost);
                        message_program = Some((spec.message_expression.clone(), message));
                    }
                }
            }
            let uses_old_self = program.references().has_variable("oldSelf");
            if uses_old_self {
                if let Some(within) = uncorrelatable {
                    failed = true;
                    self.errors.push(FieldError::invalid(
                        rule_path.child("rule"),
                        Value::String(spec.rule.clone()),
                        format!("oldSelf cannot be used on the uncorrelatable portion of the schema within {within}"),
                    ));
                }
            } else if let Some(optional) = spec.optional_old_self {
                failed = true;
                self.errors.push(FieldError::invalid(
                    rule_path.child("optionalOldSelf"),
                    Value::Bool(optional),
                    "may not be set if oldSelf is not used in rule",
                ));
            }
            if failed {
                continue;
            }
            compiled.push(Arc::new(CompiledRule {
                message: spec.message.trim().to_string(),
                reason: spec.reason.filter(|reason| REASONS.contains(&reason.as_str())),
                field_path,
                optional_old_self: spec.optional_old_self.unwrap_or(false),
                uses_old_self,
                program,
                message_program,
                rule: spec.rule,
            }));
        }
        compiled
    }
}

/// `ValidFieldPath`: a rule's `fieldPath` (`.spec.replicas`, `.labels['a.b']`) checked against the schema and
/// rendered as a field path relative to the node, or None when it names no field.
fn valid_field_path(json_path: &str, schema: &Structural) -> Option<String> {
    let mut path = FieldPath::root();
    let mut current = schema;
    let mut rest = json_path;
    let step = |name: &str, current: &mut &Structural, path: &mut FieldPath| -> Option<()> {
        if !current.properties.is_empty() {
            *current = current.property(name)?;
            *path = path.child(name);
        } else if let Some(values) = current.additional_properties_schema() {
            *current = values;
            *path = path.key(name);
        } else {
            return None;
        }
        Some(())
    };
    while !rest.is_empty() {
        if let Some(after) = rest.strip_prefix('.') {
            let end = after.find(['.', '[']).unwrap_or(after.len());
            let name = &after[..end];
            if name.is_empty() {
                return None;
            }
            step(name, &mut current, &mut path)?;
            rest = &after[end..];
        } else if let Some(after) = rest.strip_prefix("['") {
            let mut end = None;
            let bytes = after.as_bytes();
            for i in 0..bytes.len() {
                if bytes[i] == b'\'' && (i == 0 || bytes[i - 1] != b'\\') {
                    end = Some(i);
                    break;
                }
            }
            let end = end?;
            let name = after[..end].replace("\\'", "'").replace("\\\\", "\\");
            step(&name, &mut current, &mut path)?;
            rest = after[end + 1..].strip_prefix(']')?;
        } else {
            return None;
        }
    }
    (!path.as_str().is_empty()).then(|| path.to_string())
}

thread_local! {
    /// The CEL environment with the Kubernetes libraries, built once per thread.
    static ENVIRONMENT: Context<'static> = {
        let mut context = Context::default();
        context.register_all();
        context
    };
}

/// What evaluating the rules of an object found.
#[derive(Debug, Default)]
pub struct RulesVerdict {
    /// Failed rules, in the order the server reports them.
    pub errors: Vec<FieldError>,
    /// Failures of rules on values the update did not change (ratcheted into warnings).
    pub warnings: Vec<String>,
}

/// Evaluates every rule of `schema` on `object` (and `old` on updates).
pub fn evaluate(schema: &Structural, object: &Value, old: Option<&Value>) -> RulesVerdict {
    let mut walk = Walk {
        budget: cost::RUNTIME_COST_BUDGET,
        verdict: RulesVerdict::default(),
    };
    ENVIRONMENT.with(|environment| {
        let ratchet = old.is_some_and(|old| old == object);
        walk.node(environment, schema, object, old, &FieldPath::root(), true, ratchet);
    });
    walk.verdict
}

struct Walk {
    budget: i64,
    verdict: RulesVerdict,
}

/// A field path as Go's `*field.Path` prints it: the root (a nil path) is `<nil>`.
fn go_path(path: &FieldPath) -> String {
    if path.as_str().is_empty() {
        "<nil>".to_string()
    } else {
        path.to_string()
    }
}

/// The value Go reports as the bad value of a failed rule: the scalar itself, omitted for objects and arrays.
fn reported_value(value: &Value) -> Option<Value> {
    match value {
        Value::Object(_) | Value::Array(_) => None,
        other => Some(other.clone()),
    }
}

impl Walk {
    #[allow(clippy::too_many_arguments)]
    fn node(
        &mut self,
        environment: &Context<'static>,
        schema: &Structural,
        value: &Value,
        old: Option<&Value>,
        path: &FieldPath,
        root: bool,
        ratchet: bool,
    ) {
        if value.is_null() || self.budget < 0 {
            return;
        }
        self.rules(
            environment,
            &schema.compiled_rules,
            schema,
            value,
            old,
            path,
            root,
            ratchet,
        );
        for branch in &schema.all_of {
            if self.budget < 0 {
                return;
            }
            self.rules(
                environment,
                &branch.compiled_rules,
                schema,
                value,
                old,
                path,
                root,
                ratchet,
            );
        }
        match value {
            Value::Object(map) => {
                let correlatable = matches!(schema.map_type.as_deref(), None | Some("granular" | "atomic"));
                let old_map = old.and_then(Value::as_object);
                if let Some(values) = schema.additional_properties_schema() {
                    for (key, child) in map {
                        let old_child = old_map.filter(|_| correlatable).and_then(|o| o.get(key));
                        let child_ratchet = old_map.and_then(|o| o.get(key)).is_some_and(|o| o == child);
                        self.node(
                            environment,
                            values,
                            child,
                            old_child,
                            &path.key(key),
                            values.embedded_resource,
                            child_ratchet,
                        );
                        if self.budget < 0 {
                            return;
                        }
                    }
                }
                for (name, property) in &schema.properties {
                    let Some(child) = map.get(name) else { continue };
                    let old_child = old_map.filter(|_| correlatable).and_then(|o| o.get(name));
                    // apiVersion and kind of the root are never ratcheted.
                    let child_ratchet = !(root && (name == "apiVersion" || name == "kind"))
                        && old_map.and_then(|o| o.get(name)).is_some_and(|o| o == child);
                    self.node(
                        environment,
                        property,
                        child,
                        old_child,
                        &path.child(name),
                        property.embedded_resource,
                        child_ratchet,
                    );
                    if self.budget < 0 {
                        return;
                    }
                }
            }
            Value::Array(items) => {
                let Some(item_schema) = schema.items.as_deref() else {
                    return;
                };
                let old_items = old.and_then(Value::as_array);
                for (index, item) in items.iter().enumerate() {
                    let (old_item, item_ratchet) = match schema.list_type.as_deref() {
                        Some("map") => {
                            let found = old_items.and_then(|olds| {
                                olds.iter()
                                    .find(|candidate| same_keys(candidate, item, &schema.list_map_keys))
                            });
                            (found, found.is_some_and(|o| o == item))
                        }
                        Some("set") => (None, old_items.is_some_and(|olds| olds.contains(item))),
                        _ => (None, ratchet),
                    };
                    self.node(
                        environment,
                        item_schema,
                        item,
                        old_item,
                        &path.index(index),
                        item_schema.embedded_resource,
                        item_ratchet,
                    );
                    if self.budget < 0 {
                        return;
                    }
                }
            }
            _ => {}
        }
    }

    #[allow(clippy::too_many_arguments)]
    fn rules(
        &mut self,
        environment: &Context<'static>,
        rules: &[Arc<CompiledRule>],
        schema: &Structural,
        value: &Value,
        old: Option<&Value>,
        path: &FieldPath,
        root: bool,
        ratchet: bool,
    ) {
        if rules.is_empty() {
            return;
        }
        let type_value = Value::String(schema.type_name.clone().unwrap_or_default());
        if self.budget <= 0 {
            self.verdict.errors.push(FieldError::invalid(
                go_path(path),
                type_value,
                "validation failed due to running out of cost budget, no further validation rules will be run",
            ));
            self.budget = -1;
            return;
        }
        let convert = |value: &Value| {
            if root {
                values::root(value, schema)
            } else {
                values::typed(value, schema)
            }
        };
        let this = convert(value);
        let previous = old.map(convert);
        let mut context = environment.new_inner_scope();
        context.add_variable_from_value("self", this.clone());
        if let Some(previous) = &previous {
            context.add_variable_from_value("oldSelf", previous.clone());
        }
        let mut optional_context = environment.new_inner_scope();
        optional_context.add_variable_from_value("self", this.clone());
        optional_context.add_variable_from_value(
            "oldSelf",
            CelValue::Opaque(Arc::new(match &previous {
                Some(previous) => OptionalValue::of(previous.clone()),
                None => OptionalValue::none(),
            })),
        );
        let scope = [("self", Some(schema)), ("oldSelf", Some(schema))];
        for rule in rules {
            if rule.uses_old_self && old.is_none() && !rule.optional_old_self {
                continue;
            }
            let rule_context = if rule.optional_old_self {
                &optional_context
            } else {
                &context
            };
            let mut measured: Vec<(&str, &CelValue)> = vec![("self", &this)];
            if let Some(previous) = &previous {
                measured.push(("oldSelf", previous));
            }
            let rule_cost = cost::estimate_actual(rule.program.expression(), &scope, &measured);
            if rule_cost > cost::PER_CALL_LIMIT {
                self.verdict.errors.push(FieldError::invalid(
                    go_path(path),
                    type_value.clone(),
                    format!(
                        "'operation cancelled: actual cost limit exceeded': no further validation rules will be run due to call cost exceeds limit for rule: {}",
                        rule.rule_text()
                    ),
                ));
                self.budget = -1;
                return;
            }
            if rule_cost as i64 > self.budget {
                self.verdict.errors.push(FieldError::invalid(
                    go_path(path),
                    type_value.clone(),
                    "validation failed due to running out of cost budget, no further validation rules will be run",
                ));
                self.budget = -1;
                return;
            }
            self.budget -= rule_cost as i64;
            match rule.program.execute(rule_context) {
                Ok(CelValue::Bool(true)) => continue,
                Ok(CelValue::Bool(false)) => {}
                Ok(_) => {
                    self.verdict.errors.push(FieldError::invalid(
                        go_path(path),
                        type_value.clone(),
                        format!("no such overload evaluating rule: {}", rule.rule_text()),
                    ));
                    continue;
                }
                Err(error) => {
                    self.verdict.errors.push(FieldError::invalid(
                        go_path(path),
                        type_value.clone(),
                        runtime_error(&error, rule),
                    ));
                    continue;
                }
            }
            let field = match &rule.field_path {
                Some(relative) => path.child(relative),
                None => path.clone(),
            };
            let detail = rule
                .message_program
                .as_ref()
                .and_then(|(_, program)| message_of(program, &context))
                .unwrap_or_else(|| rule.default_message());
            let error = match rule.reason.as_deref() {
                Some("FieldValueForbidden") => FieldError::forbidden(go_path(&field), detail),
                Some("FieldValueRequired") => FieldError::required(go_path(&field), detail),
                Some("FieldValueDuplicate") => FieldError {
                    kind: FieldErrorKind::Duplicate,
                    field: go_path(&field),
                    detail: String::new(),
                    bad_value: reported_value(value),
                },
                _ => FieldError {
                    kind: FieldErrorKind::Invalid,
                    field: go_path(&field),
                    detail,
                    bad_value: reported_value(value),
                },
            };
            if !rule.uses_old_self && ratchet {
                self.verdict.warnings.push(error.to_string());
            } else {
                self.verdict.errors.push(error);
            }
        }
    }
}

impl CompiledRule {
    /// `ruleErrorString`: the message when there is one, else the rule.
    fn rule_text(&self) -> &str {
        if self.message.is_empty() {
            self.rule.trim()
        } else {
            &self.message
        }
    }

    /// `ruleMessageOrDefault`.
    fn default_message(&self) -> String {
        if self.message.is_empty() {
            format!("failed rule: {}", self.rule.trim())
        } else {
            self.message.clone()
        }
    }
}

/// A `messageExpression`'s message, or None when it fails or gives no usable text (the static message is used).
fn message_of(program: &Program, context: &Context<'_>) -> Option<String> {
    match program.execute(context) {
        Ok(CelValue::String(text)) => {
            let trimmed = text.trim();
            (!trimmed.is_empty() && trimmed.len() <= MAX_MESSAGE_EXPRESSION_BYTES && !trimmed.contains(['\n', '\r']))
                .then(|| trimmed.to_string())
        }
        _ => None,
    }
}

/// The message of a rule that failed to evaluate, in cel-go's words where they are known.
fn runtime_error(error: &ExecutionError, rule: &CompiledRule) -> String {
    let text = rule.rule_text();
    match error {
        ExecutionError::NoSuchOverload
        | ExecutionError::UnsupportedBinaryOperator(..)
        | ExecutionError::UnsupportedUnaryOperator(..)
        | ExecutionError::ValuesNotComparable(..)
        | ExecutionError::UnexpectedType { .. } => format!(
            "'no such overload': call arguments did not match a supported operator, function or macro signature for rule: {text}"
        ),
        ExecutionError::NoSuchKey(key) => format!("no such key: {key} evaluating rule: {text}"),
        ExecutionError::DivisionByZero(_) => format!("division by zero evaluating rule: {text}"),
        ExecutionError::RemainderByZero(_) => format!("modulus by zero evaluating rule: {text}"),
        ExecutionError::Overflow(..) => format!("integer overflow evaluating rule: {text}"),
        ExecutionError::IndexOutOfBounds(index) => {
            format!("index out of range: {} evaluating rule: {text}", cel_text(index))
        }
        ExecutionError::UndeclaredReference(name) => format!(
            "'{name}' is not supported by this server's CEL library (cel-go supports it) evaluating rule: {text}"
        ),
        ExecutionError::FunctionError { message, .. } => format!("{message} evaluating rule: {text}"),
        other => format!("{other} evaluating rule: {text}"),
    }
}

fn cel_text(value: &CelValue) -> String {
    match value {
        CelValue::Int(i) => i.to_string(),
        CelValue::UInt(u) => u.to_string(),
        other => format!("{other:?}"),
    }
}

/// Whether two items of a `map` list have the same values at the map keys.
fn same_keys(a: &Value, b: &Value, keys: &[String]) -> bool {
    keys.iter().all(|key| a.get(key) == b.get(key))
}

/// Whether the errors found so far stop rule evaluation (`hasBlockingErr`).
pub fn blocks_rules(kinds: impl IntoIterator<Item = FieldErrorKind>) -> bool {
    kinds.into_iter().any(|kind| {
        matches!(
            kind,
            FieldErrorKind::NotSupported
                | FieldErrorKind::Required
                | FieldErrorKind::TooLong
                | FieldErrorKind::TooMany
                | FieldErrorKind::TypeInvalid
        )
    })
}

/// The error added when rules were not evaluated because of blocking errors.
pub fn rules_not_checked() -> FieldError {
    // `field.Invalid(nil, nil, …)`: a nil path, and a nil value that json.Marshal prints as `null`, unquoted.
    invalid_raw(&FieldPath::from_text("<nil>"), "null", RULES_NOT_CHECKED)
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    const ROOT: &str = "spec.validation.openAPIV3Schema";

    fn schema(rules_on_spec: Value) -> Result<Structural, Vec<String>> {
        Structural::from_openapi_v3_at(
            &json!({"type": "object", "properties": {"spec": {
                "type": "object",
                "x-kubernetes-validations": rules_on_spec,
                "properties": {
                    "size": {"type": "integer"},
                    "max": {"type": "integer"},
                    "mode": {"type": "string", "x-kubernetes-validations": [
                        {"rule": "self == oldSelf", "message": "mode is immutable"}
                    ]},
                    "names": {"type": "array", "items": {"type": "string", "x-kubernetes-validations": [
                        {"rule": "self.size() <= 5"}
                    ]}}
                }
            }}}),
            ROOT,
        )
        .map_err(|errors| errors.iter().map(ToString::to_string).collect())
    }

    fn object(spec: Value) -> Value {
        json!({"apiVersion": "example.com/v1", "kind": "Widget", "metadata": {"name": "w"}, "spec": spec})
    }

    fn errors(schema: &Structural, new: &Value, old: Option<&Value>) -> Vec<String> {
        schema
            .validate_rules(new, old)
            .errors
            .iter()
            .map(ToString::to_string)
            .collect()
    }

    #[test]
    fn failed_rules_read_like_kube_apiserver() {
        let schema = schema(json!([
            {"rule": "self.size <= self.max", "messageExpression": "'size exceeds max in mode ' + self.mode"},
            {"rule": "self.size > 0", "reason": "FieldValueForbidden", "fieldPath": ".size", "message": "must be positive"},
            {"rule": "self.max < 100"}
        ]))
        .expect("compiles");
        assert!(errors(&schema, &object(json!({"size": 1, "max": 2})), None).is_empty());
        assert_eq!(
            errors(
                &schema,
                &object(json!({"size": 0, "max": 200, "names": ["ok", "toolong"]})),
                None
            ),
            vec![
                "spec: Forbidden: must be positive".replace("spec:", "spec.size:"),
                "spec: Invalid value: failed rule: self.max < 100".to_string(),
                "spec.names[1]: Invalid value: \"toolong\": failed rule: self.size() <= 5".to_string(),
            ]
        );
        assert_eq!(
            errors(&schema, &object(json!({"size": 5, "max": 3, "mode": "fast"})), None),
            vec!["spec: Invalid value: size exceeds max in mode fast".to_string()]
        );
    }

    #[test]
    fn transition_rules_and_ratcheting() {
        let schema = schema(json!([{"rule": "self.max < 100"}])).expect("compiles");
        let old = object(json!({"mode": "Fast", "max": 500}));
        // Created: the transition rule has no old value; the other rule fails.
        assert_eq!(
            errors(&schema, &old, None),
            vec!["spec: Invalid value: failed rule: self.max < 100"]
        );
        // Unchanged spec: the failure is ratcheted into a warning.
        let same = schema.validate_rules(&old, Some(&old));
        assert!(same.errors.is_empty());
        assert_eq!(same.warnings, vec!["spec: Invalid value: failed rule: self.max < 100"]);
        let changed = object(json!({"mode": "Safe", "max": 500}));
        assert_eq!(
            errors(&schema, &changed, Some(&old)),
            vec![
                "spec: Invalid value: failed rule: self.max < 100".to_string(),
                "spec.mode: Invalid value: \"Safe\": mode is immutable".to_string(),
            ]
        );
    }

    #[test]
    fn rules_that_do_not_compile_refuse_the_crd() {
        assert_eq!(
            schema(json!([{"rule": "self.sise > 1"}])).unwrap_err(),
            vec![
                "spec.validation.openAPIV3Schema.properties[spec].x-kubernetes-validations[0].rule: Invalid value: \
                 {\"Rule\":\"self.sise \\u003e 1\",\"Message\":\"\",\"MessageExpression\":\"\",\"Reason\":null,\
                 \"FieldPath\":\"\",\"OptionalOldSelf\":null}: \
                 compilation failed: ERROR: <input>:1:5: undefined field 'sise'\n | self.sise > 1\n | ....^"
            ]
        );
        let unbounded = Structural::from_openapi_v3_at(
            &json!({"type": "object", "properties": {"list": {
                "type": "array", "items": {"type": "string"},
                "x-kubernetes-validations": [{"rule": "self.all(x, self.all(y, x == y))"}]
            }}}),
            ROOT,
        )
        .unwrap_err();
        assert_eq!(unbounded.len(), 3, "{unbounded:?}");
        assert_eq!(
            unbounded[1].to_string(),
            "spec.validation.openAPIV3Schema.properties[list].x-kubernetes-validations[0].rule: Forbidden: contributed \
             to estimated rule cost total exceeding cost limit for entire OpenAPIv3 schema"
        );
        assert!(
            unbounded[0]
                .to_string()
                .starts_with("spec.validation.openAPIV3Schema.properties[list].x-kubernetes-validations[0].rule: Forbidden: estimated rule cost exceeds budget by factor of more than 100x"),
            "{}",
            unbounded[0]
        );
        let uncorrelatable = Structural::from_openapi_v3_at(
            &json!({"type": "object", "properties": {"list": {
                "type": "array", "items": {"type": "string", "maxLength": 4,
                    "x-kubernetes-validations": [{"rule": "self == oldSelf"}]}, "maxItems": 4
            }}}),
            ROOT,
        )
        .unwrap_err();
        assert_eq!(
            uncorrelatable[0].to_string(),
            "spec.validation.openAPIV3Schema.properties[list].items.x-kubernetes-validations[0].rule: Invalid value: \
             \"self == oldSelf\": oldSelf cannot be used on the uncorrelatable portion of the schema within \
             spec.validation.openAPIV3Schema.properties[list]"
        );
    }
}
