/**
 * A ConfigMap as this plugin reads and writes it: only the fields it manages.
 *
 * @module
 */

import { type JsonObject, PluginError, isObject } from "wasm-reconciler-sdk";

import { field, optionalStringMap, sortedMap, string, struct } from "./decode.js";

/** A core `v1` ConfigMap, reduced to name, labels, annotations, data and binary data (maps sorted by key). */
export interface ConfigMapObject {
  readonly name: string;
  readonly labels: ReadonlyMap<string, string>;
  readonly annotations: ReadonlyMap<string, string>;
  readonly data: ReadonlyMap<string, string>;
  readonly binaryData: ReadonlyMap<string, string>;
}

/** An observed child; throws a `PluginError` naming the child when it does not fit. */
export function fromChild(child: JsonObject): ConfigMapObject {
  try {
    const object = struct(child, "ConfigMapObject");
    string(field(object, "apiVersion"));
    string(field(object, "kind"));
    const metadata = struct(field(object, "metadata"), "ConfigMapMetadata");
    return {
      name: string(field(metadata, "name")),
      labels: optionalStringMap(metadata, "labels"),
      annotations: optionalStringMap(metadata, "annotations"),
      data: optionalStringMap(object, "data"),
      binaryData: optionalStringMap(object, "binaryData"),
    };
  } catch (failure) {
    if (!(failure instanceof PluginError)) {
      throw failure;
    }
    const metadata = child["metadata"];
    const name = isObject(metadata) && typeof metadata["name"] === "string" ? metadata["name"] : "?";
    throw failure.context(`reading child v1/ConfigMap ${name}`);
  }
}

/** The object as a desired child: empty maps left out, keys sorted (a `Map` keeps that order in JSON). */
export function toJson(configMap: ConfigMapObject): JsonObject {
  const metadata: JsonObject = { name: configMap.name };
  if (configMap.labels.size > 0) {
    metadata["labels"] = sortedMap(configMap.labels);
  }
  if (configMap.annotations.size > 0) {
    metadata["annotations"] = sortedMap(configMap.annotations);
  }
  const object: JsonObject = { apiVersion: "v1", kind: "ConfigMap", metadata };
  if (configMap.data.size > 0) {
    object["data"] = sortedMap(configMap.data);
  }
  if (configMap.binaryData.size > 0) {
    object["binaryData"] = sortedMap(configMap.binaryData);
  }
  return object;
}
