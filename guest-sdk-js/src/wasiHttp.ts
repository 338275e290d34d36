/**
 * The component's HTTP backend: one exchange through `wasi:http/outgoing-handler@0.2.12`, with the error codes of
 * `wasi:http/types` mapped to `HttpError` kinds and messages exactly as the Rust SDK maps them.
 *
 * Only a contract 0.2 build imports this module (`wasm-reconciler-sdk/wasi-http`): the entry the build generates
 * imports the WIT interfaces and hands them to `wasiHttpBackend`, whose result it installs with `http.installHttp`.
 * Nothing else in the SDK names a WIT import, so a 0.1 component never imports `wasi:http`.
 *
 * The bindings are described structurally (`WasiHttpBindings`), as both componentizers bind them: resources are
 * classes (`[constructor]` is `new`, `[static]` functions are on the class, methods are camelCase), a function
 * returning `result` returns the `ok` payload or throws an error carrying the `err` payload as `payload`, variants
 * are `{ tag, val }`, `option` is the value or `null`/`undefined`, `list<u8>` is a `Uint8Array`.
 *
 * @module
 */

import { type HttpBackend, HttpError, type HttpExchange, type Method, Response } from "./http.js";
import { quoted } from "./rustText.js";
import { decodeUtf8, encodeUtf8 } from "./utf8.js";

/** A WIT `u64`: a `number` under componentize-qjs, a `bigint` under componentize-js (StarlingMonkey). */
export type WitU64 = number | bigint;

/** A WIT variant value. */
export interface WitVariant {
  readonly tag: string;
  readonly val?: unknown;
}

/** `wasi:io/poll.pollable`. */
export interface WasiPollable {
  block(): void;
}

/** `wasi:io/error.error`. */
export interface WasiIoError {
  toDebugString(): string;
}

/** `wasi:io/streams.input-stream`. */
export interface WasiInputStream {
  blockingRead(length: WitU64): Uint8Array | readonly number[];
}

/** `wasi:io/streams.output-stream`. */
export interface WasiOutputStream {
  blockingWriteAndFlush(contents: Uint8Array): void;
}

/** `wasi:http/types.fields`. */
export interface WasiFields {
  entries(): readonly (readonly [string, Uint8Array | readonly number[]])[];
}

/** `wasi:http/types.outgoing-request`. */
export interface WasiOutgoingRequest {
  body(): WasiOutgoingBody;
  setMethod(method: WitVariant): void;
  setScheme(scheme: WitVariant | undefined): void;
  setAuthority(authority: string | undefined): void;
  setPathWithQuery(pathWithQuery: string | undefined): void;
}

/** `wasi:http/types.request-options`. */
export interface WasiRequestOptions {
  setConnectTimeout(duration: WitU64 | undefined): void;
  setFirstByteTimeout(duration: WitU64 | undefined): void;
}

/** `wasi:http/types.outgoing-body`. */
export interface WasiOutgoingBody {
  write(): WasiOutputStream;
}

/** `wasi:http/types.incoming-body`. */
export interface WasiIncomingBody {
  stream(): WasiInputStream;
}

/** `wasi:http/types.incoming-response`. */
export interface WasiIncomingResponse {
  status(): number;
  headers(): WasiFields;
  consume(): WasiIncomingBody;
}

/** `wasi:http/types.future-incoming-response`. */
export interface WasiFutureIncomingResponse {
  subscribe(): WasiPollable;
  get(): WitVariant | null | undefined;
}

/** The parts of interface `wasi:http/types@0.2.12` the backend calls. */
export interface WasiHttpTypes {
  readonly Fields: { fromList(entries: [string, Uint8Array][]): WasiFields };
  readonly OutgoingRequest: new (headers: WasiFields) => WasiOutgoingRequest;
  readonly RequestOptions: new () => WasiRequestOptions;
  readonly OutgoingBody: { finish(body: WasiOutgoingBody, trailers: WasiFields | undefined): void };
  readonly IncomingBody: { finish(body: WasiIncomingBody): unknown };
  httpErrorCode(error: WasiIoError): WitVariant | null | undefined;
}

/** Interface `wasi:http/outgoing-handler@0.2.12`. */
export interface WasiOutgoingHandler {
  handle(request: WasiOutgoingRequest, options: WasiRequestOptions | undefined): WasiFutureIncomingResponse;
}

/** What `wasiHttpBackend` calls. */
export interface WasiHttpBindings {
  readonly outgoingHandler: WasiOutgoingHandler;
  readonly types: WasiHttpTypes;
  /** How the componentizer passes a WIT `u64`. */
  readonly u64: "number" | "bigint";
}

/** Largest write to the request body stream at once (the most `blocking-write-and-flush` takes). */
export const WRITE_CHUNK = 4096;
/** Largest read from the response body stream at once. */
export const READ_CHUNK = 64 * 1024;

/** An `HttpBackend` sending each exchange through `wasi:http`. */
export function wasiHttpBackend(bindings: WasiHttpBindings): HttpBackend {
  return { send: (exchange) => send(bindings, exchange) };
}

function send(bindings: WasiHttpBindings, exchange: HttpExchange): Response {
  const { types, outgoingHandler } = bindings;
  const u64 = (value: number): WitU64 => (bindings.u64 === "bigint" ? BigInt(value) : value);
  const entries: [string, Uint8Array][] = exchange.headers.map(([name, value]) => [
    name.toLowerCase(),
    encodeUtf8(value),
  ]);
  if (exchange.body.length > 0 && !entries.some(([name]) => name === "content-length")) {
    entries.push(["content-length", encodeUtf8(String(exchange.body.length))]);
  }
  let headers: WasiFields;
  try {
    headers = types.Fields.fromList(entries);
  } catch (refused) {
    if (!isRefusal(refused)) {
      throw refused;
    }
    throw new HttpError("Other", `a header is not allowed: ${debugVariant("HeaderError", payload(refused))}`);
  }
  // `headers` moves into the request; the request moves into `handle`.
  const request = new types.OutgoingRequest(headers);
  let ownedRequest: WasiOutgoingRequest | null = request;
  let body: WasiOutgoingBody | null = null;
  try {
    const invalid = (): HttpError => new HttpError("InvalidUrl", "the host refused the URL's parts");
    attempt(() => request.setMethod(wasiMethod(exchange.method)), invalid);
    attempt(() => request.setScheme({ tag: exchange.target.scheme === "https" ? "HTTPS" : "HTTP" }), invalid);
    attempt(() => request.setAuthority(exchange.target.authority), invalid);
    attempt(() => request.setPathWithQuery(exchange.target.pathWithQuery), invalid);
    body = attempt(
      () => request.body(),
      () => new HttpError("Other", "the request body was taken twice"),
    );
    let options: WasiRequestOptions | undefined;
    if (exchange.timeoutMs !== null) {
      const timeouts = new types.RequestOptions();
      const nanos = u64(Math.min(Math.round(exchange.timeoutMs * 1e6), Number.MAX_SAFE_INTEGER));
      try {
        // A host that does not take a timeout keeps its own; the outbound timeout applies either way.
        ignoreRefusal(() => timeouts.setConnectTimeout(nanos));
        ignoreRefusal(() => timeouts.setFirstByteTimeout(nanos));
      } catch (failed) {
        release(timeouts);
        throw failed;
      }
      options = timeouts;
    }
    // The request and the options move into `handle`, whatever it answers.
    ownedRequest = null;
    let pending: WasiFutureIncomingResponse;
    try {
      pending = outgoingHandler.handle(request, options);
    } catch (refused) {
      throw failure(errorCode(refused));
    }
    try {
      // The body is written once the request is on its way, so a large body never waits for a reader.
      writeBody(bindings, body, exchange.body);
      const finishing = body;
      body = null;
      try {
        types.OutgoingBody.finish(finishing, undefined);
      } catch (refused) {
        throw failure(errorCode(refused));
      }
      return receive(bindings, pending, u64);
    } finally {
      release(pending);
    }
  } finally {
    if (body !== null) {
      release(body);
    }
    if (ownedRequest !== null) {
      release(ownedRequest);
    }
  }
}

function receive(
  bindings: WasiHttpBindings,
  pending: WasiFutureIncomingResponse,
  u64: (value: number) => WitU64,
): Response {
  const pollable = pending.subscribe();
  try {
    pollable.block();
  } finally {
    release(pollable);
  }
  const outcome = pending.get();
  if (outcome === null || outcome === undefined || outcome.tag !== "ok") {
    throw new HttpError("Other", "the response was already taken");
  }
  const result = outcome.val as WitVariant;
  if (result.tag !== "ok") {
    throw failure(result.val as WitVariant);
  }
  const response = result.val as WasiIncomingResponse;
  try {
    const status = response.status();
    const fields = response.headers();
    let headers: [string, string][];
    try {
      headers = fields
        .entries()
        .map(([name, value]) => [name.toLowerCase(), decodeUtf8(bytes(value), { fatal: false })]);
    } finally {
      release(fields);
    }
    const incoming = attempt(
      () => response.consume(),
      () => new HttpError("Other", "the response body was taken twice"),
    );
    let body: Uint8Array;
    try {
      body = readBody(bindings, incoming, u64);
    } catch (failed) {
      release(incoming);
      throw failed;
    }
    release(bindings.types.IncomingBody.finish(incoming));
    return new Response(status, body, headers);
  } finally {
    release(response);
  }
}

function writeBody(bindings: WasiHttpBindings, body: WasiOutgoingBody, contents: Uint8Array): void {
  if (contents.length === 0) {
    return;
  }
  const stream = attempt(
    () => body.write(),
    () => new HttpError("Other", "the request body stream was taken twice"),
  );
  try {
    for (let start = 0; start < contents.length; start += WRITE_CHUNK) {
      try {
        stream.blockingWriteAndFlush(contents.subarray(start, start + WRITE_CHUNK));
      } catch (failed) {
        throw streamFailure(bindings, "writing the request body", failed);
      }
    }
  } finally {
    // The stream is a child of the body: it must go before the body is finished.
    release(stream);
  }
}

/** Reads the whole body; its stream is dropped on return, the body itself is left to the caller. */
function readBody(bindings: WasiHttpBindings, incoming: WasiIncomingBody, u64: (value: number) => WitU64): Uint8Array {
  const stream = attempt(
    () => incoming.stream(),
    () => new HttpError("Other", "the response body stream was taken twice"),
  );
  const chunks: Uint8Array[] = [];
  let length = 0;
  try {
    for (;;) {
      let chunk: Uint8Array;
      try {
        chunk = bytes(stream.blockingRead(u64(READ_CHUNK)));
      } catch (failed) {
        const streamError = payload(failed);
        if (isVariant(streamError) && streamError.tag === "closed") {
          break;
        }
        throw streamFailure(bindings, "reading the response body", failed);
      }
      chunks.push(chunk);
      length += chunk.length;
    }
  } finally {
    // The stream is a child of the body: it must go before the body is finished.
    release(stream);
  }
  const body = new Uint8Array(length);
  let offset = 0;
  for (const chunk of chunks) {
    body.set(chunk, offset);
    offset += chunk.length;
  }
  return body;
}

/** A failed stream operation: the HTTP error code behind it when the host put one there. */
function streamFailure(bindings: WasiHttpBindings, doing: string, failed: unknown): HttpError {
  const streamError = payload(failed);
  if (!isVariant(streamError)) {
    return new HttpError("Other", `${doing}: ${describe(failed)}`);
  }
  if (streamError.tag === "closed") {
    return new HttpError("Other", `${doing}: the stream closed`);
  }
  const ioError = streamError.val as WasiIoError;
  try {
    // The host puts the response error (a body over the size limit, a reset) behind the stream error.
    const code = bindings.types.httpErrorCode(ioError);
    if (code !== null && code !== undefined) {
      return failure(code);
    }
    return new HttpError("Other", `${doing}: ${ioError.toDebugString()}`);
  } finally {
    release(ioError);
  }
}

const WASI_METHODS: ReadonlyMap<string, string> = new Map([
  ["GET", "get"],
  ["HEAD", "head"],
  ["POST", "post"],
  ["PUT", "put"],
  ["PATCH", "patch"],
  ["DELETE", "delete"],
  ["OPTIONS", "options"],
]);

function wasiMethod(method: Method): WitVariant {
  const tag = WASI_METHODS.get(method);
  return tag === undefined ? { tag: "other", val: method } : { tag };
}

/** The `error-code` a refused call carries. */
function errorCode(refused: unknown): WitVariant {
  const code = payload(refused);
  if (isVariant(code)) {
    return code;
  }
  throw refused;
}

/** The `HttpError` for an `error-code`, as the Rust SDK words it. */
export function failure(code: WitVariant): HttpError {
  const debug = debugErrorCode(code);
  switch (code.tag.toLowerCase()) {
    case "http-request-denied":
      return new HttpError(
        "Denied",
        "denied by the host: the plugin's settings do not allow this destination (allowedOutboundHosts, " +
          "blockedNetworks); nothing was sent",
      );
    case "connection-timeout":
    case "connection-read-timeout":
    case "connection-write-timeout":
    case "http-response-timeout":
    case "dns-timeout":
      return new HttpError("Timeout", `timed out (${debug})`);
    case "connection-refused":
      return new HttpError("Connect", "connection refused");
    case "connection-terminated":
      return new HttpError("Connect", "the connection was closed");
    case "destination-unavailable":
    case "destination-not-found":
    case "destination-ip-unroutable":
      return new HttpError("Connect", `the server is unreachable (${debug})`);
    case "dns-error": {
      const rcode = (code.val as { rcode?: unknown } | undefined)?.rcode;
      return new HttpError("Dns", `the host name did not resolve: ${typeof rcode === "string" ? rcode : "no answer"}`);
    }
    case "tls-protocol-error":
    case "tls-certificate-error":
    case "tls-alert-received":
      return new HttpError("Tls", `TLS failed (${debug})`);
    case "http-response-body-size": {
      const limit = code.val;
      return new HttpError(
        "TooLarge",
        limit === null || limit === undefined
          ? "the response body is over the host's limit"
          : `the response body is over the host's limit of ${String(limit)} bytes`,
      );
    }
    case "http-request-uri-invalid":
      return new HttpError("InvalidUrl", "the host refused the URL");
    case "internal-error":
      if (typeof code.val === "string") {
        return new HttpError("Other", code.val);
      }
      return new HttpError("Other", debug);
    default:
      return new HttpError("Other", debug);
  }
}

/** How a payload prints, by its WIT type. */
type Shape =
  | "string"
  | "number"
  | { readonly option: Shape }
  | { readonly record: string; readonly fields: readonly (readonly [wit: string, js: string, shape: Shape])[] };

const FIELD_SIZE: Shape = {
  record: "FieldSizePayload",
  fields: [
    ["field-name", "fieldName", { option: "string" }],
    ["field-size", "fieldSize", { option: "number" }],
  ],
};

/** The payload types of the `error-code` cases that carry one, by lower-cased case name. */
const ERROR_CODE_PAYLOADS: ReadonlyMap<string, Shape> = new Map<string, Shape>([
  [
    "dns-error",
    {
      record: "DnsErrorPayload",
      fields: [
        ["rcode", "rcode", { option: "string" }],
        ["info-code", "infoCode", { option: "number" }],
      ],
    },
  ],
  [
    "tls-alert-received",
    {
      record: "TlsAlertReceivedPayload",
      fields: [
        ["alert-id", "alertId", { option: "number" }],
        ["alert-message", "alertMessage", { option: "string" }],
      ],
    },
  ],
  ["http-request-body-size", { option: "number" }],
  ["http-request-header-section-size", { option: "number" }],
  ["http-request-header-size", { option: FIELD_SIZE }],
  ["http-request-trailer-section-size", { option: "number" }],
  ["http-request-trailer-size", FIELD_SIZE],
  ["http-response-header-section-size", { option: "number" }],
  ["http-response-header-size", FIELD_SIZE],
  ["http-response-body-size", { option: "number" }],
  ["http-response-trailer-section-size", { option: "number" }],
  ["http-response-trailer-size", FIELD_SIZE],
  ["http-response-transfer-coding", { option: "string" }],
  ["http-response-content-coding", { option: "string" }],
  ["internal-error", { option: "string" }],
]);

/** An `error-code` as the Rust bindings' `Debug` prints it: `ErrorCode::DnsError(DnsErrorPayload { ... })`. */
export function debugErrorCode(code: WitVariant): string {
  const shape = ERROR_CODE_PAYLOADS.get(code.tag.toLowerCase());
  const name = `ErrorCode::${upperCamel(code.tag)}`;
  return shape === undefined ? name : `${name}(${debugValue(code.val, shape)})`;
}

function debugVariant(type: string, value: unknown): string {
  return isVariant(value) ? `${type}::${upperCamel(value.tag)}` : describe(value);
}

function debugValue(value: unknown, shape: Shape): string {
  if (shape === "string") {
    return quoted(String(value));
  }
  if (shape === "number") {
    return String(value);
  }
  if ("option" in shape) {
    return value === null || value === undefined ? "None" : `Some(${debugValue(value, shape.option)})`;
  }
  const record = (value ?? {}) as Record<string, unknown>;
  const fields = shape.fields.map(([wit, js, field]) => `${wit}: ${debugValue(record[js], field)}`);
  return `${shape.record} { ${fields.join(", ")} }`;
}

/** `HTTP-request-denied` → `HttpRequestDenied`, as Rust bindings name WIT cases. */
function upperCamel(name: string): string {
  return name
    .split("-")
    .map((word) => word.charAt(0).toUpperCase() + word.slice(1).toLowerCase())
    .join("");
}

/** Calls `call`; a refusal (the `err` of a `result` the binding throws) becomes `error()`. */
function attempt<T>(call: () => T, error: () => HttpError): T {
  try {
    return call();
  } catch (thrown) {
    throw isRefusal(thrown) ? error() : thrown;
  }
}

/** Whether a binding threw the `err` case of a `result` (an error carrying `payload`, even an empty one). */
function isRefusal(thrown: unknown): boolean {
  return typeof thrown === "object" && thrown !== null && "payload" in thrown;
}

/** Calls `call`; a refusal is ignored (an optional setting the host does not take is left to the host). */
function ignoreRefusal(call: () => void): void {
  try {
    call();
  } catch (thrown) {
    if (!isRefusal(thrown)) {
      throw thrown;
    }
  }
}

/** The `err` payload a binding threw (componentizers throw an error carrying it as `payload`, or the payload). */
function payload(thrown: unknown): unknown {
  if (typeof thrown === "object" && thrown !== null && "payload" in thrown) {
    return (thrown as { payload: unknown }).payload;
  }
  return thrown;
}

function isVariant(value: unknown): value is WitVariant {
  return typeof value === "object" && value !== null && typeof (value as { tag?: unknown }).tag === "string";
}

/**
 * A `list<u8>` as a `Uint8Array`, without copying a typed array (which a binding may create in another realm, where
 * `instanceof Uint8Array` is false: copying one element by element costs seconds per megabyte in an interpreter).
 */
function bytes(value: Uint8Array | readonly number[]): Uint8Array {
  if (ArrayBuffer.isView(value)) {
    return new Uint8Array(value.buffer, value.byteOffset, value.byteLength);
  }
  return Uint8Array.from(value);
}

function describe(value: unknown): string {
  return value instanceof Error ? value.message : String(value);
}

/**
 * Drops a resource handle now, rather than when the garbage collector gets to it: a child resource (a stream of a
 * body, the headers of a response) must go before its parent is finished or dropped. Dropping a handle the call
 * already moved (or one without a dispose method) does nothing.
 */
function release(resource: unknown): void {
  if (typeof resource !== "object" || resource === null) {
    return;
  }
  const symbols = [(Symbol as { dispose?: symbol }).dispose, Symbol.for("dispose")];
  for (const symbol of symbols) {
    if (symbol === undefined) {
      continue;
    }
    const dispose = (resource as Record<symbol, unknown>)[symbol];
    if (typeof dispose === "function") {
      try {
        (dispose as () => void).call(resource);
      } catch {
        // Moved or already dropped.
      }
      return;
    }
  }
}
