/**
 * A user's cdk8s app: the operator and some buckets, imported from the package by its name, as
 * an app that installed it would (in this repository, tsconfig `paths` maps the name to the
 * sources). Run it with `npx tsx examples/buckets.ts` to write examples/dist/.
 */
import { App, Chart, Duration, type ChartProps } from 'cdk8s';
import { k8s } from 'cdk8s-plus-28';
import type { Construct } from 'constructs';
import {
  BucketOperator,
  BucketProviderConfig,
  connectionSecretName,
  CREDENTIALS_SECRET_LABEL,
  CREDENTIALS_SECRET_TYPE,
  StorageBucket,
  StorageBucketSpecDeletionPolicy,
} from 'bucketoperator';

/** Properties of {@link BucketsChart}. */
export interface BucketsChartProps extends ChartProps {
  /** Provider API base URL. */
  readonly endpoint: string;
  /** Buckets to declare, by name, with their size in GB. */
  readonly buckets: Readonly<Record<string, number>>;
}

/**
 * A provider config, the Secret holding its key, one StorageBucket per entry, and a ConfigMap
 * telling an application which Secret holds each bucket's connection details.
 */
export class BucketsChart extends Chart {
  constructor(scope: Construct, id: string, props: BucketsChartProps) {
    super(scope, id, props);
    // The key's value is filled by the user's secret tooling (sealed-secrets, ESO), never here.
    // The label opts the Secret in: the operator uses no Secret as credentials without it.
    new k8s.KubeSecret(this, 'provider-key', {
      metadata: { name: 'provider-credentials', labels: { [CREDENTIALS_SECRET_LABEL]: CREDENTIALS_SECRET_TYPE } },
      stringData: { apiKey: 'replace-me' },
    });
    const config = new BucketProviderConfig(this, 'provider', {
      metadata: { name: 'default' },
      spec: { endpoint: props.endpoint, secretRef: { name: 'provider-credentials', key: 'apiKey' } },
    });
    const secrets: Record<string, string> = {};
    for (const [name, sizeGb] of Object.entries(props.buckets)) {
      const bucket = new StorageBucket(this, name, {
        metadata: { name },
        spec: {
          region: 'eu-west-1',
          sizeGb,
          encrypted: true,
          providerRef: { name: config.name },
          deletionPolicy: StorageBucketSpecDeletionPolicy.DELETE,
        },
      });
      secrets[`${name}-secret`] = connectionSecretName(bucket);
    }
    new k8s.KubeConfigMap(this, 'bucket-secrets', { metadata: { name: 'bucket-secrets' }, data: secrets });
  }
}

/** The app: the operator in a chart without a namespace, the buckets in a team's chart. */
export function buildExampleApp(outdir: string): App {
  const app = new App({ outdir });
  new BucketOperator(new Chart(app, 'operator'), 'operator', { driftInterval: Duration.minutes(5) });
  new BucketsChart(app, 'buckets', {
    namespace: 'team-a',
    endpoint: 'https://storage.example.com',
    buckets: { logs: 50, backups: 200 },
  });
  return app;
}

if (require.main === module) buildExampleApp('examples/dist').synth();
