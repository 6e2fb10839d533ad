/**
 * Counts, while an answer streams in, the JSON values JSON.parse would make of it, so an answer
 * within its byte cap cannot still cost the heap many times its size. JSON.parse spends about
 * 40 bytes of heap on each object or array: 16 MiB of `[],[],...` is 5.6 million arrays and
 * about 230 MiB of heap (measured on Node 20), more than the operator's whole heap limit.
 *
 * What is counted are the structural bytes outside strings that each start a value or a member:
 * `{`, `[`, `,` and `:`. An honest bucket (ten fields, a few tags) has about 30 of them; one with
 * the provider's 50 tags about 125. The byte-level scan needs no parsing and no buffering: UTF-8
 * continuation bytes are all >= 0x80, so they never look like these ASCII ones.
 */

/** Bytes of answer allowed per counted value: the budget is the byte cap divided by this. */
export const BYTES_PER_JSON_VALUE = 64;

/** The value budget that goes with a byte cap of `maxBytes`. */
export function jsonValueBudget(maxBytes: number): number {
  return Math.max(1, Math.floor(maxBytes / BYTES_PER_JSON_VALUE));
}

const QUOTE = 0x22;
const BACKSLASH = 0x5c;
const OPEN_BRACE = 0x7b;
const OPEN_BRACKET = 0x5b;
const COMMA = 0x2c;
const COLON = 0x3a;

/** A running count of JSON values over the chunks of one body. */
export class JsonValueCounter {
  private inString = false;
  private escaped = false;
  private count = 0;

  /** @param budget most values allowed. */
  constructor(private readonly budget: number) {}

  /** Values counted so far. */
  get values(): number {
    return this.count;
  }

  /** Counts `chunk`; false once the budget is passed (the caller stops reading). */
  add(chunk: Uint8Array): boolean {
    let { inString, escaped, count } = this;
    for (let i = 0; i < chunk.length; i++) {
      const b = chunk[i] as number;
      if (inString) {
        if (escaped) escaped = false;
        else if (b === BACKSLASH) escaped = true;
        else if (b === QUOTE) inString = false;
      } else if (b === QUOTE) {
        inString = true;
      } else if (b === OPEN_BRACE || b === OPEN_BRACKET || b === COMMA || b === COLON) {
        count++;
      }
    }
    this.inString = inString;
    this.escaped = escaped;
    this.count = count;
    return count <= this.budget;
  }
}
