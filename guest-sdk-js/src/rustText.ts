/**
 * Values written as the Rust SDK's messages write them (`{:?}`), so that a TypeScript plugin's errors read exactly
 * like a Rust plugin's.
 *
 * @module
 */

/** `text` in double quotes, escaped as Rust's `{:?}` writes a string (the Rust SDK's messages quote URLs so). */
export function quoted(text: string): string {
  let out = '"';
  for (const character of text) {
    const point = character.codePointAt(0) ?? 0;
    switch (character) {
      case '"':
        out += '\\"';
        break;
      case "\\":
        out += "\\\\";
        break;
      case "\n":
        out += "\\n";
        break;
      case "\r":
        out += "\\r";
        break;
      case "\t":
        out += "\\t";
        break;
      case "\0":
        out += "\\0";
        break;
      default:
        out += point < 0x20 || (point >= 0x7f && point < 0xa0) ? `\\u{${point.toString(16)}}` : character;
    }
  }
  return `${out}"`;
}
