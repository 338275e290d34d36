/**
 * Reading JSON into the plugin's types, with the same messages serde gives the Rust plugin for the same input.
 *
 * @module
 */

import { isObject, type JsonObject, PluginError } from "wasm-reconciler-sdk";

const I32_MIN = -(2 ** 31);
const I32_MAX = 2 ** 31 - 1;

/** How serde names a JSON value it did not expect. */
export function unexpected(value: unknown): string {
  if (value === null || value === undefined) {
    return "null";
  }
  switch (typeof value) {
    case "boolean":
      return `boolean \`${value}\``;
    case "number":
      return Number.isInteger(value) ? `integer \`${value}\`` : `floating point \`${value}\``;
    case "string":
      return `string "${value}"`;
    default:
      return Array.isArray(value) ? "sequence" : "map";
  }
}

/** A JSON object read as the struct `name`. */
export function struct(value: unknown, name: string): JsonObject {
  if (!isObject(value)) {
    throw new PluginError(`invalid type: ${unexpected(value)}, expected struct ${name}`);
  }
  return value;
}

/** A required field. */
export function field(object: JsonObject, key: string): unknown {
  if (!Object.hasOwn(object, key)) {
    throw new PluginError(`missing field \`${key}\``);
  }
  return object[key];
}

/** A JSON integer in the range of an `i32`. */
export function i32(value: unknown): number {
  if (typeof value !== "number" || !Number.isInteger(value)) {
    throw new PluginError(`invalid type: ${unexpected(value)}, expected i32`);
  }
  if (value < I32_MIN || value > I32_MAX) {
    throw new PluginError(`invalid value: integer \`${value}\`, expected i32`);
  }
  return value;
}

/** A JSON string. */
export function string(value: unknown): string {
  if (typeof value !== "string") {
    throw new PluginError(`invalid type: ${unexpected(value)}, expected a string`);
  }
  return value;
}

/** A JSON object of strings, as a `Map` sorted by key (the order a Rust `BTreeMap` keeps). */
export function stringMap(value: unknown): Map<string, string> {
  if (!isObject(value)) {
    throw new PluginError(`invalid type: ${unexpected(value)}, expected a map`);
  }
  return sortedMap(Object.entries(value).map(([key, entry]): [string, string] => [key, string(entry)]));
}

/** A map field that defaults to empty when absent (`#[serde(default)]`: a present `null` is an error). */
export function optionalStringMap(object: JsonObject, key: string): Map<string, string> {
  return Object.hasOwn(object, key) ? stringMap(object[key]) : new Map();
}

/** Entries sorted by key in Unicode code point order (UTF-8 byte order), as a `BTreeMap<String, _>` keeps them. */
export function sortedMap(entries: Iterable<[string, string]>): Map<string, string> {
  return new Map([...entries].sort(([a], [b]) => compareCodePoints(a, b)));
}

/** Compares strings by Unicode code points (UTF-16 code unit order differs above U+FFFF). */
export function compareCodePoints(a: string, b: string): number {
  if (a === b) {
    return 0;
  }
  const left = a[Symbol.iterator]();
  const right = b[Symbol.iterator]();
  for (;;) {
    const x = left.next();
    const y = right.next();
    if (x.done || y.done) {
      return x.done ? (y.done ? 0 : -1) : 1;
    }
    const difference = (x.value.codePointAt(0) ?? 0) - (y.value.codePointAt(0) ?? 0);
    if (difference !== 0) {
      return difference;
    }
  }
}
