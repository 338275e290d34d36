/**
 * The error a plugin throws from `reconcile`, and how any thrown value becomes the plugin's error message.
 *
 * @module
 */

/** Frames of an unexpected exception's stack kept in the error message. */
export const STACK_FRAMES = 3;

/**
 * A plugin's own error: the host records its message on the object (`Reconciled=False`, reason
 * `PluginError`) and retries with backoff. A `cause` is appended (`message: cause`), like the flattened
 * source chain of the Rust SDK.
 */
export class PluginError extends Error {
  constructor(message: string, options?: { cause?: unknown }) {
    super(message, options);
    this.name = "PluginError";
  }

  /** A new error whose message is prefixed with what was being done: `context: message`. */
  context(context: string): PluginError {
    return new PluginError(`${context}: ${this.message}`);
  }
}

/** A `host.get` or `host.list` call the host refused (an undeclared kind, a malformed selector). */
export class HostError extends PluginError {
  constructor(message: string) {
    super(message);
    this.name = "HostError";
  }
}

/**
 * The reason carried by a refused import call. Componentizers throw the `err` payload of a `result` itself, or an
 * error carrying it as `payload`; a test host throws it as a string.
 */
export function refusalReason(refused: unknown): string {
  if (typeof refused === "string") {
    return refused;
  }
  if (typeof refused === "object" && refused !== null) {
    const payload = (refused as { payload?: unknown }).payload;
    if (typeof payload === "string") {
      return payload;
    }
  }
  return refused instanceof Error ? refused.message : String(refused);
}

/** Throws `new PluginError(message)` unless `condition` holds. */
export function ensure(condition: boolean, message: string): asserts condition {
  if (!condition) {
    throw new PluginError(message);
  }
}

/**
 * The message the host records for a value thrown by `reconcile`.
 *
 * A `PluginError` gives its message followed by its causes (`outer: cause`; a cause already in the message is
 * not repeated). Anything else is a bug in the plugin: its name and message, then where it was thrown, as the
 * top frames of its stack (`at converge (replicas.js:42) <- ...`).
 */
export function errorMessage(error: unknown): string {
  if (error instanceof PluginError) {
    let message = error.message;
    let cause: unknown = error.cause;
    while (cause !== undefined && cause !== null) {
      const text = cause instanceof PluginError ? cause.message : describe(cause);
      if (!message.includes(text)) {
        message = `${message}: ${text}`;
      }
      cause = cause instanceof Error ? cause.cause : undefined;
    }
    return message;
  }
  const where = error instanceof Error ? frames(error.stack ?? "") : [];
  return where.length > 0 ? `${describe(error)} (at ${where.join(" <- ")})` : describe(error);
}

function describe(error: unknown): string {
  if (error instanceof Error) {
    return error.message ? `${error.name}: ${error.message}` : error.name;
  }
  return `thrown value: ${typeof error === "string" ? error : safeText(error)}`;
}

function safeText(value: unknown): string {
  try {
    return JSON.stringify(value) ?? String(value);
  } catch {
    return String(value);
  }
}

/** Stack frames in either engine's format (`at f (file:1:2)` or `f@file:1:2`), file paths shortened. */
function frames(stack: string): string[] {
  return stack
    .split("\n")
    .map((line) => line.trim())
    .filter((line) => line.startsWith("at ") || /^[\w$.<>]*@/.test(line))
    .slice(0, STACK_FRAMES)
    .map((line) => line.replace(/^at /, "").replace(/[^\s(@]*\//g, ""));
}
