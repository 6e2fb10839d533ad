/**
 * The route table: the bucket API, the admin API for tests and the health check.
 * Handlers only translate between HTTP and the store; the rules live in the store.
 */
import { defaultAccountOf, isAccountName, type ApiKeyRing } from './auth';
import { empty, holdUntilClientGoesAway, HttpError, json, readJsonBody, type Reply } from './http';
import type { Route } from './router';
import { bucketNotFound, type BucketStore } from './store';
import { parseFaultSettings, type FaultController, type ListFault } from './faults';
import type { RequestStats } from './stats';
import { ErrorCode, type AccountInfo, type BucketList, type RevokeResult } from './types';
import { encodeContinue, invalid, parseAdminPatch, parseCreate, parseIdempotencyKey, parseIfTags, parseListQuery, parseUpdate } from './validation';

/** What the handlers need. */
export interface RouteDeps {
  store: BucketStore;
  faults: FaultController;
  stats: RequestStats;
  /** The API keys, so the admin API can add some. */
  keys: ApiKeyRing;
  regions: readonly string[];
  maxBodyBytes: number;
  /** Admin routes are left out of the table (so they answer 404) when false. */
  adminEnabled: boolean;
}

/** The caller's account; api routes always have one (the guard sets it). */
function accountOf(account: string | undefined): string {
  if (account === undefined) throw new Error('api route without an account');
  return account;
}

/**
 * The token `listRepeatContinue` answers on every page: it names an id before every real
 * one, so passing it back serves the first page again, and again.
 */
const REPEATED_CONTINUE = encodeContinue('bucket-000000000000');

/** Applies a list fault to an honest page (see FaultConfig). */
function listReply(page: BucketList, fault: ListFault): Reply {
  if (fault.kind === 'error') throw fault.error;
  const dripMs = fault.slowBodyMs > 0 ? { dripMs: fault.slowBodyMs } : {};
  switch (fault.kind) {
    case 'none':
      return { kind: 'json', status: 200, body: page, ...dripMs };
    case 'emptyObject':
      return { kind: 'json', status: 200, body: {}, ...dripMs };
    case 'notJson':
      return {
        kind: 'raw',
        status: 200,
        contentType: 'text/html; charset=utf-8',
        body: '<html><body>Service temporarily rerouted</body></html>',
        ...dripMs,
      };
    case 'repeatContinue':
      return { kind: 'json', status: 200, body: { items: page.items, continue: REPEATED_CONTINUE }, ...dripMs };
    default: {
      const never: never = fault;
      throw new Error(`unknown list fault ${JSON.stringify(never)}`);
    }
  }
}

/** Parses `{ key, account? }` of `POST /admin/api-keys`. */
function parseAddKey(body: unknown): { key: string; account?: string } {
  if (typeof body !== 'object' || body === null || Array.isArray(body)) throw invalid('body', 'must be a JSON object');
  const { key, account, ...rest } = body as Record<string, unknown>;
  const unknown = Object.keys(rest)[0];
  if (unknown !== undefined) throw invalid(unknown, 'unknown field');
  // The messages never quote the key.
  if (typeof key !== 'string' || key.length === 0 || key.length > 512 || /\s/.test(key)) {
    throw invalid('key', 'must be 1-512 characters without whitespace');
  }
  if (account === undefined) return { key };
  if (typeof account !== 'string' || !isAccountName(account)) {
    throw invalid('account', 'must be 1-63 characters of A-Za-z0-9._- starting with a letter or digit');
  }
  return { key, account };
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
      // Who the caller is, as a cloud's caller-identity call answers: clients record the
      // account a bucket was made in, and tell a vanished bucket from a changed account.
      template: '/account',
      guard: 'api',
      methods: { GET: ({ account }) => json(200, { account: accountOf(account) } satisfies AccountInfo) },
    },
    {
      template: '/buckets',
      guard: 'api',
      methods: {
        GET: ({ query, account }) => {
          const acct = accountOf(account);
          const q = parseListQuery(query);
          const page = store.query(q, acct);
          // A lookup by idempotency key is the create path's, not the scan's list.
          return q.idempotencyKey === undefined ? listReply(page, faults.list(acct)) : json(200, page);
        },
        POST: async ({ req, account }): Promise<Reply> => {
          const acct = accountOf(account);
          const key = parseIdempotencyKey(req.headers['idempotency-key']);
          const body = parseCreate(await readJsonBody(req, maxBodyBytes), regions);
          // No await from here to the store call, so no other request can consume the key
          // between the check and the hold.
          const lateMs = store.wouldCreate(key, acct) ? faults.lateCommit() : undefined;
          if (lateMs !== undefined) {
            store.commitLater(body, key, lateMs, acct);
            return holdUntilClientGoesAway(req);
          }
          const { outcome, bucket } = store.create(body, key, acct);
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
        GET: ({ params, account }) => {
          const id = param(params, 'id');
          const bucket = store.get(id, accountOf(account));
          if (bucket === undefined) throw bucketNotFound(id);
          return json(200, bucket);
        },
        PATCH: async ({ req, params, account }) => {
          const body = parseUpdate(await readJsonBody(req, maxBodyBytes));
          return json(200, store.update(param(params, 'id'), body, accountOf(account)));
        },
        DELETE: ({ req, params, account }) => {
          store.delete(param(params, 'id'), accountOf(account), parseIfTags(req.headers['if-tags']));
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
        POST: ({ params, account }) => {
          const key = param(params, 'key');
          parseIdempotencyKey(key, 'key');
          const result: RevokeResult = { bucket: store.revokeIdempotencyKey(key, accountOf(account)) ?? null };
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
      template: '/admin/api-keys',
      guard: 'admin',
      methods: {
        POST: async ({ req }) => {
          const { key, account = defaultAccountOf(key) } = parseAddKey(await readJsonBody(req, maxBodyBytes));
          const outcome = deps.keys.add(key, account);
          if (outcome === 'conflict') throw new HttpError(409, ErrorCode.Conflict, 'this API key already belongs to another account');
          return json(outcome === 'added' ? 201 : 200, { account });
        },
      },
    },
    {
      // Every account's buckets, with the query of GET /buckets (idempotencyKey: the default
      // account's); never subject to faults, so tests can look while a tenant's list is broken.
      template: '/admin/buckets',
      guard: 'admin',
      methods: { GET: ({ query }) => json(200, store.query(parseListQuery(query))) },
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
