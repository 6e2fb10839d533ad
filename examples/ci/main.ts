/**
 * This repository's cluster manifests: the BucketOperator, running the image the workflow builds,
 * and team-a's buckets. `npm run synth` writes them to dist/, which is committed: the workflow
 * fails a pull request whose dist/ is not what this file renders, and deploys dist/ from main.
 */
import { App, Chart, Duration } from 'cdk8s';
import { BucketOperator, BucketProviderConfig, StorageBucket, StorageBucketSpecDeletionPolicy } from 'bucketoperator';

// No default: dist/ must name the image the workflow pushes, never one that was not built.
const image = process.env.IMAGE;
if (!image) {
  throw new Error("IMAGE is not set: run `IMAGE=<registry>/bucketoperator:<version> npm run synth` (the workflow's check step prints the value)");
}

const app = new App();
// Cluster-scoped objects (CRDs, ClusterRoles) live here, so this chart has no namespace.
new BucketOperator(new Chart(app, 'operator'), 'operator', { image, driftInterval: Duration.minutes(10) });

const team = new Chart(app, 'buckets', { namespace: 'team-a' });
// The Secret it names is created outside git (Sealed Secrets, External Secrets) and labelled
// storage.avalonhosting.example/secret-type=provider-credentials, or the operator ignores it.
const provider = new BucketProviderConfig(team, 'provider', {
  metadata: { name: 'default' },
  spec: { endpoint: 'https://storage.example.com', secretRef: { name: 'provider-credentials', key: 'apiKey' } },
});
const buckets: Record<string, number> = { logs: 50, backups: 200 };
for (const [name, sizeGb] of Object.entries(buckets)) {
  new StorageBucket(team, name, {
    metadata: { name },
    spec: {
      region: 'eu-west-1',
      sizeGb,
      encrypted: true,
      providerRef: { name: provider.name },
      // A bucket dropped from this file (and pruned by the deploy) keeps its data at the provider.
      deletionPolicy: StorageBucketSpecDeletionPolicy.ORPHAN,
    },
  });
}

app.synth();
