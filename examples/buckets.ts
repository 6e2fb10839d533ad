/**
 * A user's cdk8s app declaring buckets through the typed constructs in imports/. Run it with
 * `npx tsx examples/buckets.ts` to write examples/dist/buckets.k8s.yaml.
 */
import { App, Chart, type ChartProps } from 'cdk8s';
import { k8s } from 'cdk8s-plus-28';
import type { Construct } from 'constructs';
import {
  BucketProviderConfig,
  StorageBucket,
  StorageBucketSpecDeletionPolicy,
} from '../imports/storage-storage.avalonhosting.example';

/** Properties of {@link BucketsChart}. */
export interface BucketsChartProps extends ChartProps {
  /** Provider API base URL. */
  readonly endpoint: string;
  /** Buckets to declare, by name, with their size in GB. */
  readonly buckets: Readonly<Record<string, number>>;
}

/** A provider config, the Secret holding its key, and one StorageBucket per entry. */
export class BucketsChart extends Chart {
  constructor(scope: Construct, id: string, props: BucketsChartProps) {
    super(scope, id, props);
    // The key's value is filled by the user's secret tooling (sealed-secrets, ESO), never here.
    new k8s.KubeSecret(this, 'provider-key', {
      metadata: { name: 'provider-credentials' },
      stringData: { apiKey: 'replace-me' },
    });
    const config = new BucketProviderConfig(this, 'provider', {
      metadata: { name: 'default' },
      spec: { endpoint: props.endpoint, secretRef: { name: 'provider-credentials', key: 'apiKey' } },
    });
    for (const [name, sizeGb] of Object.entries(props.buckets)) {
      new StorageBucket(this, name, {
        metadata: { name },
        spec: {
          region: 'eu-west-1',
          sizeGb,
          encrypted: true,
          providerRef: { name: config.name },
          deletionPolicy: StorageBucketSpecDeletionPolicy.DELETE,
        },
      });
    }
  }
}

if (require.main === module) {
  const app = new App({ outdir: 'examples/dist' });
  new BucketsChart(app, 'buckets', {
    namespace: 'team-a',
    endpoint: 'https://storage.example.com',
    buckets: { logs: 50, backups: 200 },
  });
  app.synth();
}
