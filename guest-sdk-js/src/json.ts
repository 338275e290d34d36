/**
 * JSON values as plugins see Kubernetes objects.
 *
 * @module
 */

/** Any JSON value. */
export type Json = null | boolean | number | string | Json[] | { [key: string]: Json };

/** A JSON object, e.g. a Kubernetes object; fields are narrowed by the code that reads them. */
export type JsonObject = { [key: string]: unknown };

/** Whether `value` is a JSON object (not null, not an array). */
export function isObject(value: unknown): value is JsonObject {
  return typeof value === "object" && value !== null && !Array.isArray(value);
}

/**
 * JSON text of a value, like `JSON.stringify`, except that a `Map` becomes a JSON object with its entries in
 * insertion order. Plain objects list integer-like keys (`"10"`, `"2"`) first in numeric order whatever the
 * insertion order; a `Map` keeps the order it was given, e.g. sorted as a Rust `BTreeMap` would be.
 */
export function toJsonText(value: unknown): string {
  const text = encode(value);
  if (text === undefined) {
    throw new TypeError(`${typeof value} is not JSON`);
  }
  return text;
}

function encode(value: unknown): string | undefined {
  if (value instanceof Map) {
    const members: string[] = [];
    for (const [key, entry] of value) {
      const text = encode(entry);
      if (text !== undefined) {
        members.push(`${JSON.stringify(String(key))}:${text}`);
      }
    }
    return `{${members.join(",")}}`;
  }
  if (Array.isArray(value)) {
    return `[${value.map((entry) => encode(entry) ?? "null").join(",")}]`;
  }
  if (isObject(value) && typeof (value as { toJSON?: unknown }).toJSON !== "function") {
    const members: string[] = [];
    for (const key of Object.keys(value)) {
      const text = encode(value[key]);
      if (text !== undefined) {
        members.push(`${JSON.stringify(key)}:${text}`);
      }
    }
    return `{${members.join(",")}}`;
  }
  if (typeof value === "number" && !Number.isFinite(value)) {
    throw new TypeError(`${value} is not a JSON number`);
  }
  return JSON.stringify(value);
}
