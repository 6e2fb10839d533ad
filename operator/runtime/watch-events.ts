/**
 * Decoding of the watch stream: newline-delimited JSON frames into typed events. Kept apart
 * from the socket so framing (lines split across chunks, multi-byte characters across
 * chunks, blank keep-alive lines) and ERROR frames are testable without a server.
 */
import { StringDecoder } from 'node:string_decoder';
import { apiErrorFrom } from './api-errors';
import { isRecord, oneLine } from './client-internal';
import type { KubeObject } from './types';

/** Event types a watch yields; ERROR events are thrown as `ApiError` instead. */
export type WatchEventType = 'ADDED' | 'MODIFIED' | 'DELETED' | 'BOOKMARK';

/** One decoded watch event. */
export interface WatchEvent<T extends KubeObject> {
  readonly type: WatchEventType;
  readonly object: T;
}

/** Splits a byte stream into lines and parses each as a raw watch frame. */
export class WatchLineDecoder {
  private readonly decoder = new StringDecoder('utf8');
  private buffer = '';

  /** Feeds a chunk; returns the complete raw events it finished. */
  push(chunk: Buffer | string): unknown[] {
    this.buffer += typeof chunk === 'string' ? chunk : this.decoder.write(chunk);
    const out: unknown[] = [];
    // Walk with an offset and cut the buffer once: slicing per line would copy the rest of
    // a large chunk (an initial burst of events) once per event.
    let start = 0;
    let nl = this.buffer.indexOf('\n', start);
    while (nl >= 0) {
      const line = this.buffer.slice(start, nl).trim();
      if (line !== '') out.push(JSON.parse(line) as unknown);
      start = nl + 1;
      nl = this.buffer.indexOf('\n', start);
    }
    this.buffer = this.buffer.slice(start);
    return out;
  }

  /** Flushes a last unterminated line, if any. */
  end(): unknown[] {
    const rest = (this.buffer + this.decoder.end()).trim();
    this.buffer = '';
    return rest === '' ? [] : [JSON.parse(rest) as unknown];
  }
}

const WATCH_TYPES: ReadonlySet<string> = new Set(['ADDED', 'MODIFIED', 'DELETED', 'BOOKMARK']);

/**
 * Turns one raw watch frame into an event, or throws: an ERROR frame carries a Status (410
 * Expired when the resourceVersion was compacted) and ends the watch.
 */
export function decodeWatchEvent<T extends KubeObject>(raw: unknown): WatchEvent<T> {
  if (!isRecord(raw) || typeof raw.type !== 'string' || !isRecord(raw.object)) {
    throw new Error('malformed watch event');
  }
  if (raw.type === 'ERROR') {
    const code = typeof raw.object.code === 'number' ? raw.object.code : 500;
    throw apiErrorFrom(code, raw.object, `watch ERROR event with code ${code}`);
  }
  if (!WATCH_TYPES.has(raw.type)) throw new Error(`unknown watch event type ${oneLine(raw.type)}`);
  return { type: raw.type as WatchEventType, object: raw.object as T };
}
