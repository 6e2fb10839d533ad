import { expect } from 'chai';
import { GROUP_PATH, servedKinds } from '../../../cli/discovery';
import { CliError, ExitCode } from '../../../cli/exit-codes';
import { discover } from '../../../cli/kube';
import { GROUP } from '../../../operator/api/v1/group';
import { ApiError } from '../../../operator/runtime/api-errors';
import type { TransportRequest } from '../../../operator/runtime/transport';
import { WHERE, discoveryDoc } from './fake-kube';

const NOT_SERVED_HEAD = `is not served in context "${WHERE.context}" (server ${WHERE.server})`;

/** A raw API answering discovery for `versions` (preferred first), recording the paths asked. */
function raw(versions: readonly string[], fail?: Error) {
  const paths: string[] = [];
  return {
    paths,
    json: async <T>(r: TransportRequest): Promise<T> => {
      paths.push(r.path);
      if (fail) throw fail;
      return discoveryDoc({ versions }, r.path) as T;
    },
  };
}

async function refusal(p: Promise<unknown>): Promise<CliError> {
  try {
    await p;
  } catch (err) {
    expect(err).to.be.instanceOf(CliError);
    return err as CliError;
  }
  throw new Error('expected a CliError');
}

const chosen: Record<string, { versions: string[]; want: { buckets: string[]; configs: string[] } }> = {
  'v1 alone': { versions: ['v1'], want: { buckets: ['v1'], configs: ['v1'] } },
  'v2 preferred, v1 beside it: v2 first, v1 to fall back on': { versions: ['v2', 'v1'], want: { buckets: ['v2', 'v1'], configs: ['v2', 'v1'] } },
  'v1 preferred over v2': { versions: ['v1', 'v2'], want: { buckets: ['v1', 'v2'], configs: ['v1', 'v2'] } },
  'a version this plugin cannot convert is skipped': { versions: ['v3', 'v2'], want: { buckets: ['v2'], configs: ['v2'] } },
};

describe('kubectl bucket: discovery', () => {
  for (const [name, { versions, want }] of Object.entries(chosen)) {
    it(`reads where the server serves: ${name}`, async () => {
      const served = await discover(raw(versions), WHERE);
      expect({ buckets: served.buckets.map((k) => k.version), configs: served.configs.map((k) => k.version) }).to.deep.equal(want);
      expect(served.buckets[0]).to.include({ group: GROUP, kind: 'StorageBucket', plural: 'storagebuckets', namespaced: true });
    });
  }

  it('no CRD in this context: exit 6, naming the context and the server, never "not found"', async () => {
    const err = await refusal(discover(raw([]), WHERE));
    expect(err.code).to.equal(ExitCode.NOT_SERVED);
    expect(err.message).to.equal(
      `the StorageBucket API (${GROUP}) ${NOT_SERVED_HEAD}: no CustomResourceDefinition of the group is installed there; pick the cluster with --context, or install BucketOperator there`,
    );
  });

  it('only versions this plugin cannot read: exit 6, naming them', async () => {
    const err = await refusal(discover(raw(['v3']), WHERE));
    expect([err.code, err.message]).to.deep.equal([
      ExitCode.NOT_SERVED,
      `the StorageBucket API (${GROUP}) ${NOT_SERVED_HEAD}: it serves v3 and this plugin reads v1, v2: use the plugin of the operator's release; pick the cluster with --context, or install BucketOperator there`,
    ]);
  });

  it('the group without the StorageBucket CRD (only the config CRD): exit 6, naming the kind', () => {
    const group = discoveryDoc({ versions: ['v1'] }, GROUP_PATH);
    const onlyConfigs = { kind: 'APIResourceList', resources: [{ name: 'bucketproviderconfigs', kind: 'BucketProviderConfig', namespaced: true }] };
    let caught: unknown;
    try {
      servedKinds(group, new Map([['v1', onlyConfigs]]), WHERE);
    } catch (err) {
      caught = err;
    }
    expect(caught).to.be.instanceOf(CliError);
    expect((caught as CliError).code).to.equal(ExitCode.NOT_SERVED);
    expect((caught as CliError).message).to.include(`${NOT_SERVED_HEAD}: no CustomResourceDefinition of StorageBucket is installed there`);
  });

  it('asks for the group and each version the plugin reads, all at once', async () => {
    const r = raw(['v2', 'v1']);
    await discover(r, WHERE);
    expect(r.paths).to.deep.equal([GROUP_PATH, `${GROUP_PATH}/v1`, `${GROUP_PATH}/v2`]);
  });

  const failures: Record<string, { err: Error; code: ExitCode; message: string }> = {
    'a server that cannot be reached is exit 1, naming it': {
      err: new Error('connect ECONNREFUSED 127.0.0.1:6443'),
      code: ExitCode.ERROR,
      message: `cannot reach the API server at ${WHERE.server}: connect ECONNREFUSED 127.0.0.1:6443`,
    },
    'a refused discovery is exit 1, as the server said it': {
      err: new ApiError(401, 'Unauthorized', 'Unauthorized'),
      code: ExitCode.ERROR,
      message: 'Error from server (Unauthorized): Unauthorized',
    },
  };
  for (const [name, { err, code, message }] of Object.entries(failures)) {
    it(name, async () => {
      const got = await refusal(discover(raw(['v1'], err), WHERE));
      expect([got.code, got.message]).to.deep.equal([code, message]);
    });
  }
});
