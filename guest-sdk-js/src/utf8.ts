/**
 * UTF-8 between strings and bytes, the same way in Node and in any component: with the engine's `TextEncoder` and
 * `TextDecoder` where it has them (native code: a response body of a few hundred kilobytes decodes well within a
 * reconcile's CPU deadline), else with the portable implementations below, which behave exactly like them.
 *
 * @module
 */

/** The engine's `TextEncoder`/`TextDecoder`, as far as this module uses them. */
interface NativeCodecs {
  encode(text: string): Uint8Array;
  decoder(fatal: boolean): { decode(bytes: Uint8Array): string };
}

const native: NativeCodecs | null = (() => {
  const scope = globalThis as {
    TextEncoder?: new () => { encode(text: string): Uint8Array };
    TextDecoder?: new (label: string, options: { fatal: boolean; ignoreBOM: boolean }) => { decode(bytes: Uint8Array): string };
  };
  const Encoder = scope.TextEncoder;
  const Decoder = scope.TextDecoder;
  if (typeof Encoder !== "function" || typeof Decoder !== "function") {
    return null;
  }
  const encoder = new Encoder();
  const lossy = new Decoder("utf-8", { fatal: false, ignoreBOM: true });
  const strict = new Decoder("utf-8", { fatal: true, ignoreBOM: true });
  return { encode: (text) => encoder.encode(text), decoder: (fatal) => (fatal ? strict : lossy) };
})();

/** `decodeUtf8(bytes, { fatal: true })` met bytes that are not UTF-8. */
export class Utf8Error extends Error {
  constructor(readonly index: number) {
    super(`invalid UTF-8 sequence at byte ${index}`);
    this.name = "Utf8Error";
  }
}

/** The UTF-8 bytes of `text`; a lone surrogate becomes U+FFFD, as `TextEncoder` does. */
export function encodeUtf8(text: string): Uint8Array {
  return native === null ? encodeUtf8Portable(text) : native.encode(text);
}

/** `encodeUtf8` without `TextEncoder`. */
export function encodeUtf8Portable(text: string): Uint8Array {
  const bytes: number[] = [];
  for (let index = 0; index < text.length; index += 1) {
    let point = text.charCodeAt(index);
    if (point >= 0xd800 && point <= 0xdbff) {
      const next = index + 1 < text.length ? text.charCodeAt(index + 1) : 0;
      if (next >= 0xdc00 && next <= 0xdfff) {
        point = 0x10000 + ((point - 0xd800) << 10) + (next - 0xdc00);
        index += 1;
      } else {
        point = 0xfffd;
      }
    } else if (point >= 0xdc00 && point <= 0xdfff) {
      point = 0xfffd;
    }
    if (point < 0x80) {
      bytes.push(point);
    } else if (point < 0x800) {
      bytes.push(0xc0 | (point >> 6), 0x80 | (point & 0x3f));
    } else if (point < 0x10000) {
      bytes.push(0xe0 | (point >> 12), 0x80 | ((point >> 6) & 0x3f), 0x80 | (point & 0x3f));
    } else {
      bytes.push(
        0xf0 | (point >> 18),
        0x80 | ((point >> 12) & 0x3f),
        0x80 | ((point >> 6) & 0x3f),
        0x80 | (point & 0x3f),
      );
    }
  }
  return Uint8Array.from(bytes);
}

/** Code units converted to a string at once: bounded so that `String.fromCharCode` never gets too many arguments. */
const FLUSH = 8192;

/**
 * The text of UTF-8 `bytes`. With `fatal` an invalid sequence throws `Utf8Error`; without, each maximal invalid
 * subpart becomes U+FFFD, as `TextDecoder` and Rust's `String::from_utf8_lossy` do. A byte order mark is kept.
 */
export function decodeUtf8(bytes: Uint8Array, options: { fatal: boolean }): string {
  if (native === null) {
    return decodeUtf8Portable(bytes, options);
  }
  try {
    return native.decoder(options.fatal).decode(bytes);
  } catch (failure) {
    if (!options.fatal) {
      throw failure;
    }
    // Where the first invalid sequence is: the portable decoder says (and throws `Utf8Error`).
    return decodeUtf8Portable(bytes, options);
  }
}

/** `decodeUtf8` without `TextDecoder`. */
export function decodeUtf8Portable(bytes: Uint8Array, options: { fatal: boolean }): string {
  const parts: string[] = [];
  let units: number[] = [];
  const push = (point: number): void => {
    if (point >= 0x10000) {
      const offset = point - 0x10000;
      units.push(0xd800 + (offset >> 10), 0xdc00 + (offset & 0x3ff));
    } else {
      units.push(point);
    }
    if (units.length >= FLUSH) {
      parts.push(String.fromCharCode(...units));
      units = [];
    }
  };
  let index = 0;
  while (index < bytes.length) {
    const lead = bytes[index] as number;
    if (lead < 0x80) {
      // A run of ASCII converts in one call per chunk.
      let end = index + 1;
      while (end < bytes.length && end - index < FLUSH && (bytes[end] as number) < 0x80) {
        end += 1;
      }
      if (units.length > 0) {
        parts.push(String.fromCharCode(...units));
        units = [];
      }
      parts.push(String.fromCharCode(...bytes.subarray(index, end)));
      index = end;
      continue;
    }
    let needed: number;
    let point: number;
    let lower = 0x80;
    let upper = 0xbf;
    if (lead >= 0xc2 && lead <= 0xdf) {
      needed = 1;
      point = lead & 0x1f;
    } else if (lead >= 0xe0 && lead <= 0xef) {
      needed = 2;
      point = lead & 0x0f;
      lower = lead === 0xe0 ? 0xa0 : 0x80;
      upper = lead === 0xed ? 0x9f : 0xbf;
    } else if (lead >= 0xf0 && lead <= 0xf4) {
      needed = 3;
      point = lead & 0x07;
      lower = lead === 0xf0 ? 0x90 : 0x80;
      upper = lead === 0xf4 ? 0x8f : 0xbf;
    } else {
      if (options.fatal) {
        throw new Utf8Error(index);
      }
      push(0xfffd);
      index += 1;
      continue;
    }
    let next = index + 1;
    let seen = 0;
    while (seen < needed) {
      const byte = bytes[next];
      if (byte === undefined || byte < lower || byte > upper) {
        break;
      }
      point = (point << 6) | (byte & 0x3f);
      lower = 0x80;
      upper = 0xbf;
      next += 1;
      seen += 1;
    }
    if (seen < needed) {
      if (options.fatal) {
        throw new Utf8Error(index);
      }
      // The lead byte and the continuation bytes that fit are one maximal subpart: one replacement character.
      push(0xfffd);
    } else {
      push(point);
    }
    index = next;
  }
  parts.push(String.fromCharCode(...units));
  return parts.join("");
}
