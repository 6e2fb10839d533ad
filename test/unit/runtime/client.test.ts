import { expect } from 'chai';
import { ApiError, apiErrorFrom, isAlreadyExists, isConflict, isGone, isNotFound } from '../../../operator/runtime/api-errors';
import { resourcePath } from '../../../operator/runtime/client';
import type { ResourceKind } from '../../../operator/runtime/types';
import { decodeWatchEvent, WatchLineDecoder } from '../../../operator/runtime/watch-events';

const configMaps: ResourceKind = { group: '', version: 'v1', kind: 'ConfigMap', plural: 'configmaps', namespaced: true };
const crds: ResourceKind = {
  group: 'apiextensions.k8s.io',
  version: 'v1',
  kind: 'CustomResourceDefinition',
  plural: 'customresourcedefinitions',
  namespaced: false,
};
const widgets: ResourceKind = { group: 'example.com', version: 'v1alpha1', kind: 'Widget', plural: 'widgets', namespaced: true };

describe('resourcePath', () => {
  const cases: Record<string, { args: Parameters<typeof resourcePath>; want: string }> = {
    'core, all namespaces': { args: [configMaps], want: '/api/v1/configmaps' },
    'core, one namespace': { args: [configMaps, 'ns1'], want: '/api/v1/namespaces/ns1/configmaps' },
    'core, one object': { args: [configMaps, 'ns1', 'cm'], want: '/api/v1/namespaces/ns1/configmaps/cm' },
    'group, status subresource': { args: [widgets, 'ns1', 'w', 'status'], want: '/apis/example.com/v1alpha1/namespaces/ns1/widgets/w/status' },
    'cluster-scoped ignores a namespace': {
      args: [crds, 'ns1', 'x.example.com'],
      want: '/apis/apiextensions.k8s.io/v1/customresourcedefinitions/x.example.com',
    },
    'names are escaped': { args: [configMaps, 'ns', 'a/b'], want: '/api/v1/namespaces/ns/configmaps/a%2Fb' },
  };
  for (const [name, tc] of Object.entries(cases)) {
    it(name, () => expect(resourcePath(...tc.args)).to.equal(tc.want));
  }

  it('requires a namespace for a namespaced object', () => {
    expect(() => resourcePath(configMaps, '', 'cm')).to.throw(/namespace is required/);
  });
});

describe('apiErrorFrom', () => {
  it('takes status, reason and message from a Status body', () => {
    const body = JSON.stringify({ kind: 'Status', code: 409, reason: 'AlreadyExists', message: 'configmaps "x" already exists' });
    const err = apiErrorFrom(409, body, 'fallback');
    expect(err).to.be.instanceOf(ApiError);
    expect([err.status, err.reason, err.message]).to.deep.equal([409, 'AlreadyExists', 'configmaps "x" already exists']);
    expect(isAlreadyExists(err)).to.equal(true);
    expect(isConflict(err)).to.equal(false);
  });

  it('flattens a multi-line message and truncates a huge one', () => {
    const err = apiErrorFrom(422, JSON.stringify({ code: 422, reason: 'Invalid', message: `a\nb\n${'x'.repeat(2000)}` }), 'fb');
    expect(err.message).to.not.include('\n');
    expect(err.message.length).to.be.lessThan(600);
  });

  it('does not echo a non-Status body and derives the reason from the code', () => {
    const err = apiErrorFrom(503, '<html>secret proxy page</html>', 'GET /api/v1/pods: HTTP 503');
    expect(err.reason).to.equal('ServiceUnavailable');
    expect(err.message).to.equal('GET /api/v1/pods: HTTP 503');
  });

  it('reads retryAfterSeconds from details', () => {
    const err = apiErrorFrom(
      429,
      JSON.stringify({ code: 429, reason: 'TooManyRequests', message: 'slow down', details: { retryAfterSeconds: 3 } }),
      'fb',
    );
    expect(err.retryAfterSeconds).to.equal(3);
  });

  const predicates: Record<string, { err: unknown; notFound: boolean; conflict: boolean; gone: boolean }> = {
    '404': { err: new ApiError(404, 'NotFound', 'x'), notFound: true, conflict: false, gone: false },
    '409 Conflict': { err: new ApiError(409, 'Conflict', 'x'), notFound: false, conflict: true, gone: false },
    '410 Gone': { err: new ApiError(410, 'Gone', 'x'), notFound: false, conflict: false, gone: true },
    '410 Expired (watch ERROR event)': { err: new ApiError(410, 'Expired', 'x'), notFound: false, conflict: false, gone: true },
    'a plain Error': { err: new Error('404'), notFound: false, conflict: false, gone: false },
  };
  for (const [name, tc] of Object.entries(predicates)) {
    it(`classifies ${name}`, () => {
      expect([isNotFound(tc.err), isConflict(tc.err), isGone(tc.err)]).to.deep.equal([tc.notFound, tc.conflict, tc.gone]);
    });
  }
});

describe('WatchLineDecoder', () => {
  it('reassembles events split across chunks, including a multi-byte character', () => {
    const d = new WatchLineDecoder();
    const line = Buffer.from(`${JSON.stringify({ type: 'ADDED', object: { metadata: { name: 'é' } } })}\n`);
    const cut = line.indexOf(Buffer.from('é')) + 1; // inside the two-byte character
    expect(d.push(line.subarray(0, cut))).to.deep.equal([]);
    expect(d.push(line.subarray(cut))).to.deep.equal([{ type: 'ADDED', object: { metadata: { name: 'é' } } }]);
  });

  it('yields several events from one chunk and skips blank lines', () => {
    const d = new WatchLineDecoder();
    const out = d.push('{"type":"ADDED","object":{}}\n\n{"type":"DELETED","object":{}}\n{"type":"BOOK');
    expect(out).to.have.length(2);
    expect(d.push('MARK","object":{}}')).to.deep.equal([]);
    expect(d.end()).to.deep.equal([{ type: 'BOOKMARK', object: {} }]);
  });
});

describe('decodeWatchEvent', () => {
  it('decodes a normal event', () => {
    const ev = decodeWatchEvent({ type: 'MODIFIED', object: { metadata: { name: 'x' } } });
    expect(ev.type).to.equal('MODIFIED');
  });

  it('throws an ERROR event as a Gone ApiError', () => {
    const raw = { type: 'ERROR', object: { kind: 'Status', code: 410, reason: 'Expired', message: 'too old resource version: 1 (20)' } };
    let caught: unknown;
    try {
      decodeWatchEvent(raw);
    } catch (err) {
      caught = err;
    }
    expect(isGone(caught)).to.equal(true);
  });

  it('rejects malformed frames', () => {
    expect(() => decodeWatchEvent({ type: 'ADDED' })).to.throw(/malformed/);
    expect(() => decodeWatchEvent({ type: 'WHAT', object: {} })).to.throw(/unknown watch event type/);
  });
});
