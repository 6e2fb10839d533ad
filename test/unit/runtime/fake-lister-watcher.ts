/**
 * A scripted `ListerWatcher` for reflector and informer tests: lists return the fake's
 * current objects, and each watch is a stream the test feeds events, errors or an end to.
 */
import type { ListerWatcher, ListOptions, ListResult, WatchOptions } from '../../../operator/runtime/client';
import type { WatchEvent } from '../../../operator/runtime/watch-events';
import type { KubeObject, ResourceKind } from '../../../operator/runtime/types';

type Frame = { event: WatchEvent<KubeObject> } | { error: unknown } | { end: true };

/** One open watch as the test sees it. */
export class FakeWatch {
  private readonly frames: Frame[] = [];
  private wake: (() => void) | undefined;
  closed = false;

  constructor(readonly opts: WatchOptions) {}

  /** Delivers an event. */
  send(type: WatchEvent<KubeObject>['type'], object: KubeObject): void {
    this.push({ event: { type, object } });
  }

  /** Makes the stream throw. */
  fail(error: unknown): void {
    this.push({ error });
  }

  /** Ends the stream as a server-side timeout would. */
  end(): void {
    this.push({ end: true });
  }

  private push(frame: Frame): void {
    this.frames.push(frame);
    this.wake?.();
  }

  async *stream(): AsyncGenerator<WatchEvent<KubeObject>, void, undefined> {
    const signal = this.opts.signal;
    const onAbort = (): void => this.wake?.();
    signal?.addEventListener('abort', onAbort);
    try {
      this.opts.onOpen?.();
      for (;;) {
        if (signal?.aborted) return;
        const frame = this.frames.shift();
        if (!frame) {
          await new Promise<void>((resolve) => {
            this.wake = resolve;
          });
          continue;
        }
        if ('end' in frame) return;
        if ('error' in frame) throw frame.error;
        yield frame.event;
      }
    } finally {
      this.closed = true;
      signal?.removeEventListener('abort', onAbort);
    }
  }
}

/** The fake API: objects by name, a version counter, scripted list failures. */
export class FakeListerWatcher implements ListerWatcher {
  readonly objects = new Map<string, KubeObject>();
  readonly watches: FakeWatch[] = [];
  readonly listFailures: unknown[] = [];
  lists = 0;
  private rv = 100;

  /** Stores an object with a fresh resourceVersion (and a uid if it has none) and returns it. */
  put(name: string, data: Record<string, string> = {}, uid = `uid-${name}`): KubeObject {
    const obj = { metadata: { name, namespace: 'ns', uid, resourceVersion: String(++this.rv) }, data };
    this.objects.set(name, obj);
    return obj;
  }

  /** The newest version handed out. */
  version(): string {
    return String(this.rv);
  }

  get current(): FakeWatch | undefined {
    return this.watches[this.watches.length - 1];
  }

  async list<T extends KubeObject>(_kind: ResourceKind, _opts?: ListOptions): Promise<ListResult<T>> {
    this.lists++;
    if (this.listFailures.length > 0) throw this.listFailures.shift();
    return { items: [...this.objects.values()] as T[], resourceVersion: String(this.rv) };
  }

  watch<T extends KubeObject>(_kind: ResourceKind, opts: WatchOptions = {}): AsyncIterable<WatchEvent<T>> {
    const w = new FakeWatch(opts);
    this.watches.push(w);
    return w.stream() as AsyncIterable<WatchEvent<T>>;
  }
}
