/**
 * A small blocking HTTP client for plugins built against contract 0.2 (`wasm-reconciler-build --contract 0.2`).
 *
 * Requests go out through `wasi:http/outgoing-handler`; the host sends one only when it matches an entry of the
 * plugin's `allowedOutboundHosts` setting, and answers anything else with an `HttpError` of kind `"Denied"` without
 * sending it. Time spent waiting for responses counts against the plugin's outbound budget, not its deadline.
 *
 * ```ts
 * import { http, variables } from "wasm-reconciler-sdk";
 *
 * const zone = http.Request.get("http://127.0.0.1:8081/api/v1/servers/localhost/zones/example.org.")
 *   .header("X-API-Key", variables.get("api_key"))
 *   .send()
 *   .errorForStatus()
 *   .json<{ serial: number }>();
 * // or: http.request({ url, method: "POST", headers: { "X-API-Key": key }, body: "{}" })
 * ```
 *
 * Redirects are followed (up to `maxRedirects`, 5 by default); each one is a new request the host checks against
 * the allowlist again. A 303, or a 301/302 answering a `POST`, is followed with a `GET` without body, as browsers
 * do. Every error a request ends in is an `HttpError` (a `PluginError`: thrown out of `reconcile`, it becomes the
 * reconcile's error) whose message starts with the request, `GET http://...: `.
 *
 * In a component built with `--contract 0.2 --engine starlingmonkey` requests go through the `wasi:http` imports
 * (the build installs them). In Node (unit tests) they go to the host installed with `withHost` from
 * `wasm-reconciler-sdk/testing`: a `MemoryHost` given a handler with `withHttp` plays the server, and without one
 * denies every request, as a host with no `allowedOutboundHosts` does.
 *
 * @module
 */

import { PluginError } from "./error.js";
import { type Json, toJsonText } from "./json.js";
import { quoted } from "./rustText.js";
import { decodeUtf8, encodeUtf8, Utf8Error } from "./utf8.js";

/** Redirects a request follows unless told otherwise. */
export const DEFAULT_MAX_REDIRECTS = 5;

/** An HTTP method; any other name (`"PROPFIND"`) is sent as given. */
export type Method = "GET" | "HEAD" | "POST" | "PUT" | "PATCH" | "DELETE" | "OPTIONS" | (string & {});

/** Header fields: pairs in order, or an object of name to value. */
export type HeaderInit = Iterable<readonly [string, string]> | Readonly<Record<string, string>>;

/**
 * What went wrong with a request, spelled as the Rust SDK's `HttpErrorKind` prints:
 *
 * - `Denied`: the host refused to send it (no entry of `allowedOutboundHosts` matches, or its host resolves to a
 *   blocked network). Nothing was sent.
 * - `Timeout`: no response in time (the request's timeout, the host's `outboundTimeout` or the outbound budget).
 * - `Connect`: the server could not be reached (connection refused or reset, unreachable).
 * - `Dns`: the host name did not resolve.
 * - `Tls`: TLS failed (untrusted certificate, handshake error).
 * - `TooLarge`: the response body is over the host's `maxResponseSize`.
 * - `InvalidUrl`: the URL is not an absolute `http` or `https` URL.
 * - `Status(404)`: the response had a non-2xx status (`Response.errorForStatus`).
 * - `Other`: anything else (a protocol error, a header the host refuses, an internal error).
 */
export type HttpErrorKind =
  | "Denied"
  | "Timeout"
  | "Connect"
  | "Dns"
  | "Tls"
  | "TooLarge"
  | "InvalidUrl"
  | "Other"
  | `Status(${number})`;

/** A failed request: what kind of failure, and a message naming the request. */
export class HttpError extends PluginError {
  /** The kind of failure. */
  readonly kind: HttpErrorKind;
  /** The response's status for a `Status(...)` kind, else `null`. */
  readonly status: number | null;

  constructor(kind: HttpErrorKind, message: string) {
    super(message);
    this.name = "HttpError";
    this.kind = kind;
    const status = /^Status\((\d+)\)$/.exec(kind);
    this.status = status === null ? null : Number(status[1]);
  }

  /** An error of kind `Status(status)`. */
  static ofStatus(status: number, message: string): HttpError {
    return new HttpError(`Status(${status})`, message);
  }

  /** Whether the host refused to send the request. */
  get isDenied(): boolean {
    return this.kind === "Denied";
  }

  /** The same kind of error with its message prefixed: `context: message`. */
  override context(context: string): HttpError {
    return new HttpError(this.kind, `${context}: ${this.message}`);
  }

  /** The error as it reads once the request it happened to is named: `METHOD URL: message`. */
  during(method: string, url: Url): HttpError {
    return this.context(`${method} ${url}`);
  }
}

/** `http` or `https`. */
export type Scheme = "http" | "https";

/** A URL split the way `wasi:http` takes it. */
export class Url {
  private constructor(
    /** `http` or `https`. */
    readonly scheme: Scheme,
    /** `host[:port]`. */
    readonly authority: string,
    /** The path and query, starting with `/`. */
    readonly pathWithQuery: string,
  ) {}

  /**
   * Parses an absolute `http` or `https` URL; the fragment is dropped. Throws an `HttpError` of kind `InvalidUrl`
   * naming the text otherwise.
   *
   * ```ts
   * const url = Url.parse("https://api.example.com:8443/zones?rrsets=false#top");
   * // url.scheme === "https", url.authority === "api.example.com:8443", url.pathWithQuery === "/zones?rrsets=false"
   * ```
   */
  static parse(text: string): Url {
    const invalid = (why: string): HttpError => new HttpError("InvalidUrl", `${quoted(text)}: ${why}`);
    const separator = text.indexOf("://");
    if (separator < 0) {
      throw invalid("not an absolute URL");
    }
    const schemeName = text.slice(0, separator).toLowerCase();
    if (schemeName !== "http" && schemeName !== "https") {
      throw invalid("only http and https URLs are supported");
    }
    const afterScheme = text.slice(separator + 3);
    const hash = afterScheme.indexOf("#");
    const rest = hash < 0 ? afterScheme : afterScheme.slice(0, hash);
    const split = rest.search(/[/?]/);
    const authority = split < 0 ? rest : rest.slice(0, split);
    const path = split < 0 ? "" : rest.slice(split);
    if (authority === "" || /\s/u.test(authority)) {
      throw invalid("no host");
    }
    const pathWithQuery = path === "" ? "/" : path.startsWith("?") ? `/${path}` : path;
    return new Url(schemeName, authority, pathWithQuery);
  }

  /**
   * Resolves a `Location` header against this URL: absolute (`https://b.test/x`), scheme-relative (`//b.test/x`),
   * absolute-path (`/x`) or relative (`x`, next to the last path segment).
   */
  join(location: string): Url {
    if (location.includes("://")) {
      return Url.parse(location);
    }
    if (location.startsWith("//")) {
      return Url.parse(`${this.scheme}:${location}`);
    }
    let path: string;
    if (location.startsWith("/")) {
      path = location;
    } else {
      const base = this.pathWithQuery.split("?")[0] ?? "/";
      path = `${base.slice(0, base.lastIndexOf("/") + 1)}${location}`;
    }
    return Url.parse(`${this.scheme}://${this.authority}${path}`);
  }

  /** `scheme://authority/path?query`. */
  toString(): string {
    return `${this.scheme}://${this.authority}${this.pathWithQuery}`;
  }
}

/** Everything a request is made of; `request()` takes it, and `Request.parts` gives it back. */
export interface RequestInit {
  /** The URL, parsed when the request is sent. */
  url: string;
  /** `GET` when absent. */
  method?: Method | undefined;
  /** Header fields, sent in this order. */
  headers?: HeaderInit | undefined;
  /** The body: a string is sent as UTF-8. Empty (no body) when absent. */
  body?: string | Uint8Array | null | undefined;
  /** Longest wait for the response headers, in milliseconds; the host's `outboundTimeout` applies too. */
  timeoutMs?: number | null | undefined;
  /** Redirects followed before the redirect response itself is returned; 5 when absent. */
  maxRedirects?: number | undefined;
}

/** A request as built: the normalized form of `RequestInit`. */
export interface RequestParts {
  readonly method: Method;
  readonly url: string;
  readonly headers: readonly (readonly [string, string])[];
  readonly body: Uint8Array;
  readonly timeoutMs: number | null;
  readonly maxRedirects: number;
}

/**
 * One request on the wire, as an HTTP backend sends it: a redirect followed is a new exchange. A test host's
 * handler (`MemoryHost.withHttp`) receives these.
 */
export interface HttpExchange {
  /** The method, e.g. `GET`. */
  readonly method: Method;
  /** The absolute URL, `http://host:port/path?query`. */
  readonly url: string;
  /** The same URL, split. */
  readonly target: Url;
  /** Header fields as the request gave them, in order. */
  readonly headers: readonly (readonly [string, string])[];
  /** The body; empty for none. */
  readonly body: Uint8Array;
  /** Longest wait for the response headers, in milliseconds, when the request sets one. */
  readonly timeoutMs: number | null;
}

/**
 * What sends one exchange and returns its whole response (redirects come back as responses); it throws an
 * `HttpError` when the exchange fails. In a component the build installs one calling `wasi:http`; `withHost`
 * installs the test host's.
 */
export interface HttpBackend {
  send(exchange: HttpExchange): Response;
}

let backend: HttpBackend | null = null;

/** Makes `sender` send requests and returns the previous one (the build and `withHost` call this). */
export function installHttp(sender: HttpBackend | null): HttpBackend | null {
  const previous = backend;
  backend = sender;
  return previous;
}

/** What sends requests, if anything. */
export function currentHttp(): HttpBackend | null {
  return backend;
}

const EMPTY = new Uint8Array(0);

/** An HTTP request, built step by step and sent with `send()`. */
export class Request {
  readonly #method: Method;
  readonly #url: string;
  readonly #headers: [string, string][] = [];
  #body: Uint8Array = EMPTY;
  #timeoutMs: number | null = null;
  #maxRedirects = DEFAULT_MAX_REDIRECTS;

  /** A request with no headers and no body. */
  constructor(method: Method, url: string) {
    this.#method = method;
    this.#url = url;
  }

  /** A `GET` request. */
  static get(url: string): Request {
    return new Request("GET", url);
  }

  /** A `HEAD` request. */
  static head(url: string): Request {
    return new Request("HEAD", url);
  }

  /** A `POST` request. */
  static post(url: string): Request {
    return new Request("POST", url);
  }

  /** A `PUT` request. */
  static put(url: string): Request {
    return new Request("PUT", url);
  }

  /** A `PATCH` request. */
  static patch(url: string): Request {
    return new Request("PATCH", url);
  }

  /** A `DELETE` request. */
  static delete(url: string): Request {
    return new Request("DELETE", url);
  }

  /** A request from its parts, as `request()` takes them. */
  static from(init: RequestInit): Request {
    const built = new Request(init.method ?? "GET", init.url);
    for (const [name, value] of headerPairs(init.headers)) {
      built.header(name, value);
    }
    if (init.body !== undefined && init.body !== null) {
      built.body(init.body);
    }
    if (init.timeoutMs !== undefined && init.timeoutMs !== null) {
      built.timeout(init.timeoutMs);
    }
    if (init.maxRedirects !== undefined) {
      built.maxRedirects(init.maxRedirects);
    }
    return built;
  }

  /** Adds a header field. */
  header(name: string, value: string): this {
    this.#headers.push([String(name), String(value)]);
    return this;
  }

  /** Sets the body; a string is sent as UTF-8. */
  body(body: string | Uint8Array): this {
    this.#body = typeof body === "string" ? encodeUtf8(body) : body.slice();
    return this;
  }

  /**
   * Sets a JSON body (written as `toJsonText` writes it: a `Map` keeps its order) and `Content-Type:
   * application/json`. Throws `PluginError` when `value` is not JSON.
   */
  json(value: unknown): this {
    let text: string;
    try {
      text = toJsonText(value);
    } catch (failure) {
      throw new PluginError(
        `the request body is not JSON: ${failure instanceof Error ? failure.message : String(failure)}`,
      );
    }
    return this.header("Content-Type", "application/json").body(text);
  }

  /** Gives up waiting for the response headers after `ms` milliseconds. */
  timeout(ms: number): this {
    if (!Number.isFinite(ms) || ms < 0) {
      throw new PluginError(`a request timeout must be a number of milliseconds of at least 0, not ${ms}`);
    }
    this.#timeoutMs = ms;
    return this;
  }

  /** Follows at most `redirects` redirects (0: return the redirect response itself). */
  maxRedirects(redirects: number): this {
    if (!Number.isInteger(redirects) || redirects < 0 || redirects > 0xffff_ffff) {
      throw new PluginError(`maxRedirects must be a whole number of at least 0, not ${redirects}`);
    }
    this.#maxRedirects = redirects;
    return this;
  }

  /** What the request is made of. */
  get parts(): RequestParts {
    return {
      method: this.#method,
      url: this.#url,
      headers: this.#headers.map(([name, value]) => [name, value] as const),
      body: this.#body,
      timeoutMs: this.#timeoutMs,
      maxRedirects: this.#maxRedirects,
    };
  }

  /**
   * Sends the request and reads the whole response, following redirects. Throws `HttpError`: of kind
   * `InvalidUrl` naming the URL when it does not parse, else with the message prefixed by the exchange that
   * failed (`GET http://...: `).
   */
  send(): Response {
    let url = Url.parse(this.#url);
    const sender = requiredBackend();
    let method = this.#method;
    let body = this.#body;
    let redirects = 0;
    const headers = this.#headers.map(([name, value]) => [name, value] as const);
    for (;;) {
      const exchange: HttpExchange = {
        method,
        url: url.toString(),
        target: url,
        headers,
        body,
        timeoutMs: this.#timeoutMs,
      };
      let response: Response;
      try {
        response = sender.send(exchange);
      } catch (failure) {
        throw failure instanceof HttpError ? failure.during(method, url) : failure;
      }
      const location = response.header("location");
      const redirected = REDIRECTS.has(response.status);
      if (location === null || !redirected || redirects >= this.#maxRedirects) {
        return response;
      }
      redirects += 1;
      try {
        url = url.join(location);
      } catch (failure) {
        throw failure instanceof HttpError ? failure.during(method, url) : failure;
      }
      // As browsers do: a 303, or a 301/302 answering a POST, is followed with a GET and no body.
      if (response.status === 303 || ((response.status === 301 || response.status === 302) && method === "POST")) {
        method = "GET";
        body = EMPTY;
      }
    }
  }
}

/** Characters of the body a status error quotes. */
const EXCERPT = 200;

/** Statuses that redirect when they carry a `Location`. */
const REDIRECTS = new Set([301, 302, 303, 307, 308]);

/** Builds the request `init` describes and sends it: `Request.from(init).send()`. */
export function request(init: RequestInit): Response {
  return Request.from(init).send();
}

/** A whole HTTP response. */
export class Response {
  /** The status code. */
  readonly status: number;
  /** The body. */
  readonly body: Uint8Array;
  readonly #headers: [string, string][] = [];

  /** A response with `status`, `body` (a string is UTF-8) and header fields; for test hosts. */
  constructor(status: number, body: string | Uint8Array = EMPTY, headers: HeaderInit = []) {
    if (!Number.isInteger(status) || status < 0 || status > 0xffff) {
      throw new PluginError(`an HTTP status is a whole number from 0 to 65535, not ${status}`);
    }
    this.status = status;
    this.body = typeof body === "string" ? encodeUtf8(body) : body;
    for (const [name, value] of headerPairs(headers)) {
      this.withHeader(name, value);
    }
  }

  /** Adds a header field (its name in lower case); for test hosts. */
  withHeader(name: string, value: string): this {
    this.#headers.push([String(name).toLowerCase(), String(value)]);
    return this;
  }

  /** Header fields in order, names in lower case. */
  get headers(): readonly (readonly [string, string])[] {
    return this.#headers;
  }

  /** The first value of header `name` (any case), or `null`. */
  header(name: string): string | null {
    const wanted = name.toLowerCase();
    const found = this.#headers.find(([field]) => field === wanted);
    return found === undefined ? null : found[1];
  }

  /** Whether the status is 2xx. */
  get isSuccess(): boolean {
    return this.status >= 200 && this.status < 300;
  }

  /**
   * The body as UTF-8 text; throws `PluginError` when it is not UTF-8. With `lossy`, each invalid sequence becomes
   * U+FFFD instead, as Rust's `String::from_utf8_lossy` does.
   */
  text(options: { lossy?: boolean | undefined } = {}): string {
    if (options.lossy === true) {
      return decodeUtf8(this.body, { fatal: false });
    }
    try {
      return decodeUtf8(this.body, { fatal: true });
    } catch (failure) {
      throw new PluginError(`reading the response body: ${utf8Failure(failure)}`);
    }
  }

  /** The body parsed as JSON; throws `PluginError` when it is not. */
  json<T = Json>(): T {
    let text: string;
    try {
      text = decodeUtf8(this.body, { fatal: true });
    } catch (failure) {
      throw new PluginError(`parsing the response body: ${utf8Failure(failure)}`);
    }
    try {
      return JSON.parse(text) as T;
    } catch (failure) {
      throw new PluginError(
        `parsing the response body: ${failure instanceof Error ? failure.message : String(failure)}`,
      );
    }
  }

  /**
   * The response itself when its status is 2xx; else throws an `HttpError` of kind `Status(<status>)` carrying
   * the status and the start of the body: `the server answered 422: <up to 200 characters>`.
   */
  errorForStatus(): this {
    if (this.isSuccess) {
      return this;
    }
    // 200 characters come from at most 800 bytes (4 per character, 3 per replaced sequence): decode no more.
    const excerpt = Array.from(decodeUtf8(this.body.subarray(0, 4 * EXCERPT), { fatal: false }))
      .slice(0, EXCERPT)
      .join("");
    throw HttpError.ofStatus(this.status, `the server answered ${this.status}: ${excerpt.trim()}`);
  }
}

function requiredBackend(): HttpBackend {
  if (backend === null) {
    throw new Error(
      "outbound HTTP is not available here: in a component it needs a build with `--contract 0.2 --engine " +
        "starlingmonkey` (componentize-qjs cannot build a component importing wasi:http); in Node, wrap the code " +
        "under test in `withHost(new MemoryHost().withHttp(handler), () => ...)` from wasm-reconciler-sdk/testing",
    );
  }
  return backend;
}

function headerPairs(headers: HeaderInit | undefined): [string, string][] {
  if (headers === undefined) {
    return [];
  }
  if (typeof (headers as Partial<Iterable<unknown>>)[Symbol.iterator] === "function") {
    return Array.from(headers as Iterable<readonly [string, string]>, ([name, value]) => [name, value]);
  }
  return Object.entries(headers as Readonly<Record<string, string>>);
}

function utf8Failure(failure: unknown): string {
  return failure instanceof Utf8Error
    ? `the body is not UTF-8 (${failure.message})`
    : failure instanceof Error
      ? failure.message
      : String(failure);
}
