/**
 * A route table small enough to read at a glance: path templates with `{param}`
 * segments, one handler per method, and the guard each route needs.
 */
import type { IncomingMessage } from 'node:http';
import type { Reply } from './http';

/** Who may call a route. Faults apply exactly to `api` routes. */
export type Guard = 'none' | 'api' | 'admin';

/** What a handler gets to see of a request. */
export interface RequestContext {
  req: IncomingMessage;
  /** Decoded `{param}` segments of the path. */
  params: Readonly<Record<string, string>>;
  query: URLSearchParams;
  /** The caller's account on `api` routes (from its key); undefined on the others. */
  account: string | undefined;
}

/** Handles one method of one route. */
export type Handler = (ctx: RequestContext) => Reply | Promise<Reply>;

/** A path template and its handlers. */
export interface Route {
  /** e.g. `/buckets/{id}`; also the route name in stats. */
  template: string;
  guard: Guard;
  methods: Readonly<Partial<Record<string, Handler>>>;
}

/** Outcome of matching a request against the table. */
export type RouteMatch =
  | { kind: 'found'; route: Route; handler: Handler; params: Record<string, string> }
  | { kind: 'wrongMethod'; route: Route; allow: string }
  | { kind: 'none' };

function matchTemplate(template: string, pathname: string): Record<string, string> | undefined {
  const want = template.split('/');
  const got = pathname.split('/');
  if (want.length !== got.length) return undefined;
  const params: Record<string, string> = {};
  for (let i = 0; i < want.length; i++) {
    const w = want[i] ?? '';
    const g = got[i] ?? '';
    if (w.startsWith('{') && w.endsWith('}')) {
      if (g.length === 0) return undefined;
      try {
        params[w.slice(1, -1)] = decodeURIComponent(g);
      } catch {
        return undefined;
      }
    } else if (w !== g) {
      return undefined;
    }
  }
  return params;
}

/** Finds the handler for a method and path; distinguishes unknown paths from wrong methods. */
export function matchRoute(routes: readonly Route[], method: string, pathname: string): RouteMatch {
  for (const route of routes) {
    const params = matchTemplate(route.template, pathname);
    if (params === undefined) continue;
    const handler = Object.hasOwn(route.methods, method) ? route.methods[method] : undefined;
    if (handler === undefined) {
      return { kind: 'wrongMethod', route, allow: Object.keys(route.methods).join(', ') };
    }
    return { kind: 'found', route, handler, params };
  }
  return { kind: 'none' };
}
