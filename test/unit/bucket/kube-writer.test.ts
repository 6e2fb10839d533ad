import { expect } from 'chai';
import type { StorageBucket } from '../../../operator/api/v1';
import { kubeWriter } from '../../../operator/bucket/kube-writer';
import { ApiError } from '../../../operator/runtime/api-errors';
import type { KubeClient, ListOptions } from '../../../operator/runtime/client';
import { bucket } from '../../support/fixtures';

/** A client whose list answers from `items`, honouring only the providerRef field selector. */
function fakeClient(items: StorageBucket[], opts: { selectable: boolean }, calls: ListOptions[]): KubeClient {
  const client = {
    list: async (_kind: unknown, o: ListOptions = {}) => {
      calls.push(o);
      if (o.fieldSelector) {
        // A CRD without selectableFields: the API server refuses the selector.
        if (!opts.selectable) throw new ApiError(400, 'BadRequest', 'field label not supported: spec.providerRef.name');
        const name = o.fieldSelector.replace('spec.providerRef.name=', '');
        return { items: items.filter((b) => b.spec.providerRef.name === name).slice(0, o.limit), resourceVersion: '1' };
      }
      return { items, resourceVersion: '1' };
    },
  };
  return client as unknown as KubeClient;
}

describe('kubeWriter.configHasUsers', () => {
  const cases: Record<string, { args: { items: StorageBucket[]; selectable: boolean }; want: { users: boolean; lists: number } }> = {
    'a user, selectable field: one filtered list': {
      args: { items: [bucket('a').build()], selectable: true },
      want: { users: true, lists: 1 },
    },
    'only buckets of other configs, selectable field': {
      args: {
        items: [
          bucket('a')
            .withSpec({ providerRef: { name: 'other' } })
            .build(),
        ],
        selectable: true,
      },
      want: { users: false, lists: 1 },
    },
    'a user, CRD without the selectable field: falls back to the namespace list': {
      args: {
        items: [
          bucket('a')
            .withSpec({ providerRef: { name: 'other' } })
            .build(),
          bucket('b').build(),
        ],
        selectable: false,
      },
      want: { users: true, lists: 2 },
    },
    'no user, CRD without the selectable field': {
      args: {
        items: [
          bucket('a')
            .withSpec({ providerRef: { name: 'other' } })
            .build(),
        ],
        selectable: false,
      },
      want: { users: false, lists: 2 },
    },
  };
  for (const [name, tc] of Object.entries(cases)) {
    it(name, async () => {
      const calls: ListOptions[] = [];
      const writer = kubeWriter(fakeClient(tc.args.items, { selectable: tc.args.selectable }, calls), 'test');
      expect(await writer.configHasUsers({ namespace: 'ns1', name: 'default' })).to.equal(tc.want.users);
      expect(calls).to.have.length(tc.want.lists);
      expect(calls[0]).to.include({ namespace: 'ns1', fieldSelector: 'spec.providerRef.name=default', limit: 1 });
    });
  }

  it('no users once the StorageBucket kind is gone (its CRD deleted): the config may go with its own CRD', async () => {
    const client = {
      list: async () => {
        throw new ApiError(404, 'NotFound', 'the server could not find the requested resource');
      },
    } as unknown as KubeClient;
    expect(await kubeWriter(client, 'test').configHasUsers({ namespace: 'ns1', name: 'default' })).to.equal(false);
  });

  it('passes on errors other than 400', async () => {
    const client = {
      list: async () => {
        throw new ApiError(403, 'Forbidden', 'no');
      },
    } as unknown as KubeClient;
    const outcome = await kubeWriter(client, 'test')
      .configHasUsers({ namespace: 'ns1', name: 'default' })
      .then(
        () => undefined,
        (e: unknown) => e,
      );
    expect(outcome).to.be.instanceOf(ApiError).with.property('status', 403);
  });
});
