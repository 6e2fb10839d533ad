/**
 * The route table: the bucket API, the admin API for tests and the health check.
 * Handlers only translate between HTTP and the store; the rules live in the store.
 */
import { empty, holdUntilClientGoesAway, json, readJsonBody, type Reply } from './http';
import type { Route } from './router';
import { bucketNotFound, type BucketStore } from './store';
import { parseFaultSettings, type FaultController } from './faults';
import type { RequestStats } from './stats';
import type { RevokeResult } from './types';
import { parseAdminPatch, parseCreate, parseIdempotencyKey, parseListQuery, parseUpdate } from './validation';

/** What the handlers need. */
export interface RouteDeps {
  store: BucketStore;
  faults: FaultController;
  stats: RequestStats;
  regions: readonly string[];
  maxBodyBytes: number;
  /** Admin routes are left out of the table (so they answer 404) when false. */
  adminEnabled: boolean;
}

function param(params: Readonly<Record<string, string>>, name: string): string {
  const value = params[name];
  if (value === undefined) throw new Error(`route has no {${name}} segment`);
  return value;
}

/** Builds the route table. */
export function buildRoutes(deps: RouteDeps): Route[] {
  const { store, faults, stats, regions, maxBodyBytes } = deps;
  const routes: Route[] = [
    {
      template: '/healthz',
      guard: 'none',
      methods: { GET: () => json(200, { status: 'ok' }) },
    },
    {
      template: '/buckets',
      guard: 'api',
      methods: {
        GET: ({ query }) => json(200, store.query(parseListQuery(query))),
        POST: async ({ req }): Promise<Reply> => {
          const key = parseIdempotencyKey(req.headers['idempotency-key']);
          const body = parseCreate(await readJsonBody(req, maxBodyBytes), regions);
          // No await from here to the store call, so no other request can consume the key
          // between the check and the hold.
          const lateMs = store.wouldCreate(key) ? faults.lateCommit() : undefined;
          if (lateMs !== undefined) {
            store.commitLater(body, key, lateMs);
            return holdUntilClientGoesAway(req);
          }
          const { outcome, bucket } = store.create(body, key);
          if (outcome === 'replayed') return json(200, bucket, { 'Idempotent-Replayed': 'true' });
          // The bucket is committed before the drop: that is the crash window clients must survive.
          if (faults.dropAfterCreate()) return { kind: 'drop' };
          return json(201, bucket, { Location: `/buckets/${bucket.id}` });
        },
      },
    },
    {
      template: '/buckets/{id}',
      guard: 'api',
      methods: {
        GET: ({ params }) => {
          const id = param(params, 'id');
          const bucket = store.get(id);
          if (bucket === undefined) throw bucketNotFound(id);
          return json(200, bucket);
        },
        PATCH: async ({ req, params }) => {
          const body = parseUpdate(await readJsonBody(req, maxBodyBytes));
          return json(200, store.update(param(params, 'id'), body));
        },
        DELETE: ({ params }) => {
          store.delete(param(params, 'id'));
          return empty(204);
        },
      },
    },
    {
      // A verb under the key rather than DELETE /idempotency-keys/{key}: the key is not
      // removed, it stays recorded as revoked, and the bucket it made (if any) is kept.
      template: '/idempotency-keys/{key}/revoke',
      guard: 'api',
      methods: {
        POST: ({ params }) => {
          const key = param(params, 'key');
          parseIdempotencyKey(key, 'key');
          const result: RevokeResult = { bucket: store.revokeIdempotencyKey(key) ?? null };
          return json(200, result);
        },
      },
    },
  ];
  if (!deps.adminEnabled) return routes;
  routes.push(
    {
      template: '/admin/faults',
      guard: 'admin',
      methods: {
        GET: () => json(200, faults.get()),
        PUT: async ({ req }) => json(200, faults.set(parseFaultSettings(await readJsonBody(req, maxBodyBytes)))),
      },
    },
    {
      template: '/admin/stats',
      guard: 'admin',
      methods: {
        GET: () => json(200, stats.snapshot()),
        DELETE: () => {
          stats.reset();
          return empty(204);
        },
      },
    },
    {
      template: '/admin/late-commits',
      guard: 'admin',
      methods: { GET: () => json(200, store.lateCommits()) },
    },
    {
      template: '/admin/buckets/{id}',
      guard: 'admin',
      methods: {
        PATCH: async ({ req, params }) => {
          const id = param(params, 'id');
          const bucket = store.adminPatch(id, parseAdminPatch(await readJsonBody(req, maxBodyBytes)));
          if (bucket === undefined) throw bucketNotFound(id);
          return json(200, bucket);
        },
        DELETE: ({ params }) => {
          const id = param(params, 'id');
          if (!store.adminDelete(id)) throw bucketNotFound(id);
          return empty(204);
        },
      },
    },
  );
  return routes;
}
