import { expect } from 'chai';
import type { Counter } from 'prom-client';
import { BucketMetric } from '../../../operator/api/metric-names';
import { ApiError } from '../../../operator/runtime/api-errors';
import { Metrics } from '../../../operator/runtime/metrics';
import type { ResourceKind } from '../../../operator/runtime/types';
import { WriteFailureReporter, failureCode, resourceLabel, type WriteTarget } from '../../../operator/runtime/write-failures';
import { captureLogger } from './fakes';

const SECRET = 's3cr3t-token-value';
const events: WriteTarget = { resource: 'events.events.k8s.io', verb: 'create' };

function refused(status: number, reason: string): ApiError {
  // A Status message quoting a secret, as an admission denial of a Secret could.
  return new ApiError(status, reason, `denied: data.password=${SECRET}`);
}

function connectionRefused(): Error {
  const cause = Object.assign(new Error(`connect ECONNREFUSED (Bearer ${SECRET})`), { code: 'ECONNREFUSED' });
  return new Error(`POST /apis/events.k8s.io/v1/namespaces/ns/events failed: ECONNREFUSED ${SECRET}`, { cause });
}

function harness() {
  const metrics = new Metrics({ defaultMetrics: false });
  const { logger, lines } = captureLogger();
  const reporter = new WriteFailureReporter({ logger, metrics });
  const count = async (labels: Record<string, string>): Promise<number> => {
    const counter = metrics.registry.getSingleMetric(BucketMetric.writeFailures) as Counter | undefined;
    const values = (await counter?.get())?.values ?? [];
    return values.filter((v) => Object.entries(labels).every(([k, want]) => v.labels[k] === want)).reduce((n, v) => n + v.value, 0);
  };
  const warns = () => lines.filter((l) => l.level === 40);
  const debugs = () => lines.filter((l) => l.level === 20);
  return { metrics, reporter, lines, count, warns, debugs };
}

describe('WriteFailureReporter', () => {
  const cases: Record<string, { err: unknown; want: { code: string; hint: RegExp; fields: Record<string, string> } }> = {
    'RBAC denial names the verb and resource to grant': {
      err: refused(403, 'Forbidden'),
      want: {
        code: '403',
        hint: /forbidden: check the operator's RBAC \(it needs create on events\.events\.k8s\.io\)/,
        fields: { reason: 'Forbidden' },
      },
    },
    'rejected credentials': { err: refused(401, 'Unauthorized'), want: { code: '401', hint: /credentials/, fields: { reason: 'Unauthorized' } } },
    'missing namespace or API': { err: refused(404, 'NotFound'), want: { code: '404', hint: /CRD not installed/, fields: { reason: 'NotFound' } } },
    'admission refusal': { err: refused(422, 'Invalid'), want: { code: '422', hint: /admission policy/, fields: { reason: 'Invalid' } } },
    throttling: { err: refused(429, 'TooManyRequests'), want: { code: '429', hint: /rate-limiting/, fields: { reason: 'TooManyRequests' } } },
    'server error': {
      err: refused(503, 'ServiceUnavailable'),
      want: { code: '503', hint: /server error 503/, fields: { reason: 'ServiceUnavailable' } },
    },
    'unreachable server': { err: connectionRefused(), want: { code: 'network', hint: /could not be reached/, fields: { errno: 'ECONNREFUSED' } } },
    'a thrown non-Error': { err: `oops ${SECRET}`, want: { code: 'network', hint: /could not be reached/, fields: {} } },
  };
  for (const [name, tc] of Object.entries(cases)) {
    it(name, async () => {
      const h = harness();
      h.reporter.report(events, tc.err);
      expect(await h.count({ ...events, code: tc.want.code })).to.equal(1);
      expect(h.warns()).to.have.length(1);
      expect(h.warns()[0]).to.include({ resource: events.resource, verb: 'create', code: tc.want.code, ...tc.want.fields });
      expect(String(h.warns()[0]?.msg)).to.match(tc.want.hint);
      expect(JSON.stringify(h.lines), 'no secret in the log').to.not.include(SECRET);
    });
  }

  it('counts every failure and warns once per (resource, verb, code); repeats go to debug', async () => {
    const h = harness();
    for (let i = 0; i < 3; i++) h.reporter.report(events, refused(403, 'Forbidden'));
    h.reporter.report({ ...events, verb: 'patch' }, refused(403, 'Forbidden'));
    h.reporter.report(events, refused(429, 'TooManyRequests'));
    h.reporter.report({ resource: 'configmaps', verb: 'create' }, refused(403, 'Forbidden'));

    expect(await h.count({ ...events, code: '403' })).to.equal(3);
    expect(await h.count({ resource: events.resource, verb: 'patch', code: '403' })).to.equal(1);
    expect(await h.count({ ...events, code: '429' })).to.equal(1);
    expect(await h.count({ resource: 'configmaps', code: '403' })).to.equal(1);
    expect(h.warns().map((l) => [l.resource, l.verb, l.code])).to.deep.equal([
      ['events.events.k8s.io', 'create', '403'],
      ['events.events.k8s.io', 'patch', '403'],
      ['events.events.k8s.io', 'create', '429'],
      ['configmaps', 'create', '403'],
    ]);
    expect(h.debugs().map((l) => l.failures)).to.deep.equal([2, 3]);
  });

  it('shares one counter between reporters on one registry', async () => {
    const h = harness();
    const other = new WriteFailureReporter({ logger: captureLogger().logger, metrics: h.metrics });
    h.reporter.report(events, refused(403, 'Forbidden'));
    other.report(events, refused(403, 'Forbidden'));
    expect(await h.count({ ...events, code: '403' })).to.equal(2);
  });

  it('logs without metrics and never throws', () => {
    const { logger, lines } = captureLogger();
    const reporter = new WriteFailureReporter({ logger });
    expect(() => reporter.report(events, undefined)).to.not.throw();
    expect(lines.filter((l) => l.level === 40)).to.have.length(1);
  });
});

describe('write failure helpers', () => {
  const kinds: Record<string, { args: [ResourceKind, string?]; want: string }> = {
    'core group': { args: [{ group: '', version: 'v1', kind: 'ConfigMap', plural: 'configmaps', namespaced: true }], want: 'configmaps' },
    'named group': {
      args: [{ group: 'events.k8s.io', version: 'v1', kind: 'Event', plural: 'events', namespaced: true }],
      want: 'events.events.k8s.io',
    },
    subresource: {
      args: [{ group: 'example.com', version: 'v1', kind: 'Widget', plural: 'widgets', namespaced: true }, 'status'],
      want: 'widgets.example.com/status',
    },
  };
  for (const [name, tc] of Object.entries(kinds)) {
    it(`resourceLabel: ${name}`, () => expect(resourceLabel(...tc.args)).to.equal(tc.want));
  }

  it('failureCode is the HTTP status of an API answer, else network', () => {
    expect([failureCode(refused(403, 'Forbidden')), failureCode(connectionRefused()), failureCode(null)]).to.deep.equal([
      '403',
      'network',
      'network',
    ]);
  });
});
