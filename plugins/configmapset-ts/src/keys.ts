/**
 * What Kubernetes accepts in a ConfigMap the template describes — label keys and values, annotation keys, ConfigMap
 * keys — checked before anything is written, with the messages of the Rust plugin
 * (`plugins/configmapset/src/keys.rs`).
 *
 * @module
 */

import type { ConfigMapTemplate } from "./resource.js";

/** Longest label value, and longest name part of a label or annotation key. */
const MAX_NAME = 63;
/** Longest prefix of a label or annotation key, and longest ConfigMap key. */
const MAX_SUBDOMAIN = 253;

const NAME_RULE =
  "a name of at most 63 letters, digits, '-', '_' and '.' that starts and ends with a letter or digit, optionally " +
  "after a DNS subdomain and '/'";

/** The first problem of `template`, as a message naming its field; labels, then annotations, then data, each in key order. */
export function checkTemplate(template: ConfigMapTemplate): string | null {
  for (const [key, value] of sorted(template.labels)) {
    if (!isQualifiedName(key)) {
      return `spec.template.metadata.labels: \`${key}\` is not a valid label key: ${NAME_RULE}`;
    }
    if (!isLabelValue(value)) {
      return (
        `spec.template.metadata.labels: the value \`${value}\` of \`${key}\` is not a valid label value: at most ` +
        "63 letters, digits, '-', '_' and '.' that start and end with a letter or digit, or empty"
      );
    }
  }
  for (const [key] of sorted(template.annotations)) {
    if (!isQualifiedName(key)) {
      return `spec.template.metadata.annotations: \`${key}\` is not a valid annotation key: ${NAME_RULE}`;
    }
  }
  for (const [key] of sorted(template.data)) {
    if (!isConfigMapKey(key)) {
      return (
        `spec.template.data: \`${key}\` is not a valid ConfigMap key: at most 253 letters, digits, '-', '_' and ` +
        "'.', and not `.` or `..`"
      );
    }
  }
  return null;
}

/** A label or annotation key: `[prefix/]name`, the prefix a DNS-1123 subdomain. */
export function isQualifiedName(key: string): boolean {
  const slash = key.indexOf("/");
  if (slash < 0) {
    return isName(key);
  }
  return isSubdomain(key.slice(0, slash)) && isName(key.slice(slash + 1));
}

/** A label value: empty, or a name. */
export function isLabelValue(value: string): boolean {
  return value === "" || isName(value);
}

/** A ConfigMap key: letters, digits, `-`, `_` and `.`, at most 253, not `.` or `..`. */
export function isConfigMapKey(key: string): boolean {
  return key.length > 0 && key.length <= MAX_SUBDOMAIN && key !== "." && key !== ".." && /^[-._a-zA-Z0-9]+$/.test(key);
}

function isName(name: string): boolean {
  return name.length > 0 && name.length <= MAX_NAME && /^[A-Za-z0-9]([-A-Za-z0-9_.]*[A-Za-z0-9])?$/.test(name);
}

function isSubdomain(prefix: string): boolean {
  return (
    prefix.length > 0 &&
    prefix.length <= MAX_SUBDOMAIN &&
    prefix.split(".").every((label) => label.length <= MAX_NAME && /^[a-z0-9]([-a-z0-9]*[a-z0-9])?$/.test(label))
  );
}

/** The entries in key order, as a `BTreeMap` iterates them. */
function sorted(map: ReadonlyMap<string, string>): [string, string][] {
  return [...map].sort(([left], [right]) => (left < right ? -1 : left > right ? 1 : 0));
}
