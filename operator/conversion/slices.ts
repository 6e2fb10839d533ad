/**
 * Long work kept off the path that renews the Lease: the conversion webhook shares its process
 * (and its one event loop) with the controllers and the leader election, so a review of many
 * objects is converted and serialized a slice at a time, giving the event loop a turn between
 * slices. Timers (the Lease renewal is one) and I/O run in those turns.
 *
 * Why slices rather than a worker thread: a worker is a second V8 isolate (10 MiB more RSS
 * with nothing loaded, measured, in a pod whose baseline is some 60 MiB), needs a second entry
 * point in the bundled image, and copies every review across threads; slicing needs none of
 * that. The one step it cannot slice, `JSON.parse` of the body, is bounded by the body cap:
 * a 7 MiB review of 4,213 StorageBuckets parsed in 80 to 160 ms on a shared 2-core machine at
 * load 11 (435 ms once, with a major collection in it), against the Lease's 2 s retry period
 * and 10 s renewal deadline; a slice of 64 objects took 0.4 ms (median) there.
 */
import type { ConversionReviewResponse } from './review';

/** Thrown into a sliced run whose caller gave up (the client went away). */
export class SlicedRunAborted extends Error {
  constructor() {
    super('conversion webhook: the review was abandoned');
  }
}

/**
 * Runs `steps` to its end, `perSlice` steps at a time, and resolves with what it returns.
 * Between two slices the event loop takes a full turn (`setImmediate` runs after the timers
 * and I/O of the turn it was queued in). `abandoned`, asked between slices, stops the run with
 * {@link SlicedRunAborted}.
 */
export function runInSlices<T>(steps: Iterator<void, T, void>, perSlice: number, abandoned: () => boolean = () => false): Promise<T> {
  return new Promise<T>((resolve, reject) => {
    const slice = (): void => {
      try {
        if (abandoned()) {
          reject(new SlicedRunAborted());
          return;
        }
        for (let i = 0; i < perSlice; i++) {
          const step = steps.next();
          if (step.done) {
            resolve(step.value);
            return;
          }
        }
      } catch (err) {
        reject(err);
        return;
      }
      setImmediate(slice);
    };
    slice();
  });
}

/**
 * The JSON text of `review`, one converted object at a time (yielding after each), so a large
 * answer is serialized in slices too. The text is what `JSON.stringify(review)` gives.
 */
export function* reviewJsonSteps(review: ConversionReviewResponse): Generator<void, string, void> {
  const { uid, convertedObjects, result } = review.response;
  const objects: string[] = [];
  for (const object of convertedObjects) {
    objects.push(JSON.stringify(object));
    yield;
  }
  // Built in the key order of review.ts's answer(), so the text is the same as stringify's.
  return (
    `{"apiVersion":${JSON.stringify(review.apiVersion)},"kind":${JSON.stringify(review.kind)},` +
    `"response":{"uid":${JSON.stringify(uid)},"convertedObjects":[${objects.join(',')}],"result":${JSON.stringify(result)}}}`
  );
}
