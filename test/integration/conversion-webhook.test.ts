/**
 * The conversion webhook on a real control plane: both CRDs serve v1 and v2 (rendered with
 * combineVersions and `strategy: Webhook`, the API server calling the operator by URL on
 * loopback), the operator runs in-process with the webhook on, makes its certificates and
 * injects the caBundle, and kubectl reads and edits the same objects in both versions.
 *
 * The operator watches a namespace of its own, so its controllers leave the test's objects
 * alone (no provider runs here): what is checked is the API machinery end to end.
 *
 * The operator runs as its ServiceAccount under the RBAC and both admission policies the
 * construct renders with the webhook on, and a table checks what that user may not do; the
 * keeper's replacement of its Secret keeps what other tools put there, under that policy.
 *
 * The rollout deadlock of issue 34: a replica with the webhook on, beside one without it that
 * holds the Lease, makes the missing Secret, has the CRDs trust it and becomes Ready.
 *
 * One test runs a whole CA rotation (short-lived certificates) under v2 traffic through the
 * API server, three replicas behind one address, a follower and then the leader stopped during
 * it (the last replica then finishes the rotation). It proves that the designed sequence fails
 * no conversion on a real API server; it does not prove that each wait is needed: on one
 * machine the API server and the replicas pick changes up within milliseconds, so even a
 * rotation without overlaps passes here. The overlaps are proved by the
 * unit tests, which model readers that lag (test/unit/conversion/secret-certs.test.ts).
 */
import { expect } from 'chai';
import { X509Certificate } from 'node:crypto';
import { connect, createServer, type Server } from 'node:net';
import { renderCrd } from '../../infra/crd';
import { COMMON_LABELS } from '../../infra/labels';
import * as v1 from '../../operator/api/v1';
import * as v2 from '../../operator/api/v2';
import { BucketMetric } from '../../operator/api/metric-names';
import { startOperator, type OperatorOptions, type RunningOperator } from '../../operator/operator';
import { KubeClient } from '../../operator/runtime/client';
import { createLogger } from '../../operator/runtime/logging';
import type { ControlPlane } from '../support/control-plane';
import { eventually } from '../support/eventually';
import { apply, getJson, kubectlOk } from '../support/kube';
import { freePort } from '../support/ports';
import { freshNamespace } from './setup';
import type { RestConfig } from '../../operator/runtime/rest-config';
import {
  applyV1Only,
  configWithoutSecret,
  conversionTraffic,
  crdName,
  failedRead,
  SERVER_SIDE_APPLY,
  startConversionStack,
  VERSION_PAIRS,
  WEBHOOK_SECRET,
  webhookCrd,
  type ConversionStack,
} from '../support/conversion-stack';

const BUCKETS_V2 = `storagebuckets.${v2.VERSION}.${v2.GROUP}`;
const BUCKETS_V1 = `storagebuckets.${v1.VERSION}.${v1.GROUP}`;
const CONFIGS_V2 = `bucketproviderconfigs.${v2.VERSION}.${v2.GROUP}`;
const CONFIGS_V1 = `bucketproviderconfigs.${v1.VERSION}.${v1.GROUP}`;
const SECRET = WEBHOOK_SECRET;
const PAIRS = VERSION_PAIRS;

interface Obj {
  metadata: { name: string; uid: string; labels?: Record<string, string>; annotations?: Record<string, string> };
  spec: Record<string, unknown>;
}
interface CrdJson {
  metadata: Record<string, unknown>;
  spec: { conversion?: { webhook?: { clientConfig?: { url?: string; caBundle?: string } } } };
  status?: { conditions?: Array<{ type: string; status: string }> };
}

/** Annotations the API server or kubectl add, which say nothing about conversion. */
function userAnnotations(o: Obj): Record<string, string> {
  return Object.fromEntries(Object.entries(o.metadata.annotations ?? {}).filter(([k]) => k !== 'kubectl.kubernetes.io/last-applied-configuration'));
}

describe('conversion webhook on a real control plane', function () {
  this.timeout(120_000);
  let cp: ControlPlane;
  let ns = '';
  let opNs = '';
  let url = '';
  let op: RunningOperator | undefined;
  let stack: ConversionStack | undefined;
  let saKubeconfig = '';
  let saConfig: RestConfig;

  const get = (resource: string, name: string, namespace = ns) => getJson<Obj>(cp, resource, name, namespace);
  const must = async (resource: string, name: string, namespace = ns): Promise<Obj> => {
    const o = await get(resource, name, namespace);
    if (!o) throw new Error(`${resource} ${name} not found`);
    return o;
  };

  before(async () => {
    // A control plane of its own: this file replaces both CRDs with a two-version, webhook-
    // converting variant, and a restore onto the shared one left the files after it (dist/
    // apply as a no-op, GitOps health, lean caches) with CRDs that were not quite dist/'s.
    stack = await startConversionStack('conversion');
    ({ cp, ns, opNs, url, saKubeconfig, saConfig } = stack);
    op = stack.startOperator();
    await op.manager.elected();
  });

  after(async () => {
    await op?.stop();
    await stack?.stop();
  });

  it("the operator makes a CA and serving certificate in its Secret and injects the CA into both CRDs' caBundle", async () => {
    const secret = await eventually(() => getJson<{ type: string; data?: Record<string, string> }>(cp, 'secret', SECRET, opNs), {
      description: 'the webhook Secret',
      timeoutMs: 30_000,
    });
    expect(secret.type).to.equal('kubernetes.io/tls');
    expect(Object.keys(secret.data ?? {}).sort()).to.deep.equal(['ca.crt', 'ca.key', 'tls.crt', 'tls.key']);
    const ca = secret.data?.['ca.crt'];
    const serving = new X509Certificate(Buffer.from(secret.data?.['tls.crt'] ?? '', 'base64'));
    expect(serving.checkIP('127.0.0.1')).to.equal('127.0.0.1');
    expect(serving.checkHost(`bucketoperator-webhook.${opNs}.svc`)).to.not.equal(undefined);
    for (const [def] of PAIRS) {
      await eventually(async () => (await getJson<CrdJson>(cp, 'crd', crdName(def), ''))?.spec.conversion?.webhook?.clientConfig?.caBundle === ca, {
        description: `${crdName(def)} to carry the caBundle`,
        timeoutMs: 30_000,
      });
    }
    // A GitOps re-apply of the rendered CRDs (no caBundle in them) keeps the injected one and
    // shows no diff: the operator's field manager owns the field, so Argo CD's and Flux's
    // server-side apply need no ignoreDifferences for it.
    for (const [old, next] of PAIRS) {
      const manifest = JSON.stringify(webhookCrd([old, next], url));
      await kubectlOk(cp, [...SERVER_SIDE_APPLY], manifest);
      expect(
        (await getJson<CrdJson>(cp, 'crd', crdName(old), ''))?.spec.conversion?.webhook?.clientConfig?.caBundle,
        'after a server-side apply',
      ).to.equal(ca);
      const diff = await cp.kubectl(['diff', '--server-side', '--field-manager=conversion-test', '-f', '-'], { input: manifest });
      expect(diff.code, `kubectl diff --server-side: ${diff.stdout}${diff.stderr}`).to.equal(0);
    }
  });

  it('a StorageBucket created in v1 is read and edited in v2 and read back in v1, nothing lost', async () => {
    await apply(cp, {
      apiVersion: v1.API_VERSION,
      kind: 'StorageBucket',
      metadata: { name: 'logs', namespace: ns, labels: { team: 'a' }, annotations: { 'example.com/note': 'keep me' } },
      spec: { region: 'eu-west-1', sizeGB: 3, encrypted: true, providerRef: { name: 'default' }, deletionPolicy: 'Orphan', managementPolicy: 'Full' },
    });
    const original = await must(BUCKETS_V1, 'logs');
    // The API server may take a moment to trust the injected caBundle.
    const asV2 = await eventually(() => get(BUCKETS_V2, 'logs'), { description: 'the bucket read as v2', timeoutMs: 30_000 });
    expect(asV2.spec).to.deep.equal({
      forProvider: { region: 'eu-west-1', size: '3G', encrypted: true },
      providerConfigRef: { name: 'default' },
      deletionPolicy: 'Orphan',
      managementPolicy: 'Full',
    });
    expect(asV2.metadata.uid).to.equal(original.metadata.uid);
    expect(asV2.metadata.labels).to.deep.equal({ team: 'a' });
    expect(userAnnotations(asV2)).to.deep.equal({ 'example.com/note': 'keep me' });

    // An edit in v2 that v1 cannot spell (sizes only grow): served as whole GB, rounded up, the spelling kept.
    await kubectlOk(cp, ['patch', BUCKETS_V2, 'logs', '-n', ns, '--type=merge', '-p', '{"spec":{"forProvider":{"size":"3500M"}}}']);
    const edited = await must(BUCKETS_V1, 'logs');
    expect(edited.spec).to.deep.equal({ ...original.spec, sizeGB: 4 });
    expect(userAnnotations(edited)).to.deep.equal({ 'example.com/note': 'keep me', [v1.V2_SIZE_ANNOTATION]: '3500M' });
    const editedV2 = await must(BUCKETS_V2, 'logs');
    expect((editedV2.spec['forProvider'] as Record<string, unknown>)['size']).to.equal('3500M');
    expect(userAnnotations(editedV2)).to.deep.equal({ 'example.com/note': 'keep me' });

    // A metadata edit through v2 is a v1 -> v2 -> v1 round trip of the whole object: nothing else changes.
    await kubectlOk(cp, ['label', BUCKETS_V2, 'logs', '-n', ns, 'stage=prod']);
    const back = await must(BUCKETS_V1, 'logs');
    expect(back.spec).to.deep.equal(edited.spec);
    expect(userAnnotations(back)).to.deep.equal(userAnnotations(edited));
    expect(back.metadata.labels).to.deep.equal({ team: 'a', stage: 'prod' });
  });

  it('a StorageBucket created in v2 is stored as v1 and reads the same in both', async () => {
    await apply(cp, {
      apiVersion: v2.API_VERSION,
      kind: 'StorageBucket',
      metadata: { name: 'made-in-v2', namespace: ns },
      spec: { forProvider: { region: 'us-east-1', size: '0.5T' }, providerConfigRef: { name: 'other' } },
    });
    const asV1 = await must(BUCKETS_V1, 'made-in-v2');
    expect(asV1.spec).to.deep.include({ region: 'us-east-1', sizeGB: 500, providerRef: { name: 'other' } });
    expect(userAnnotations(asV1)).to.deep.equal({ [v1.V2_SIZE_ANNOTATION]: '0.5T' });
    const asV2 = await must(BUCKETS_V2, 'made-in-v2');
    expect((asV2.spec['forProvider'] as Record<string, unknown>)['size']).to.equal('0.5T');
    // A list in v2 converts every object.
    const list = JSON.parse(await kubectlOk(cp, ['get', BUCKETS_V2, '-n', ns, '-o', 'json'])) as { items: Obj[] };
    expect(list.items.map((i) => i.metadata.name).sort()).to.deep.equal(['logs', 'made-in-v2']);
  });

  it('a BucketProviderConfig created in v1 is read and edited in v2', async () => {
    await apply(cp, {
      apiVersion: v1.API_VERSION,
      kind: 'BucketProviderConfig',
      metadata: { name: 'cfg', namespace: ns },
      spec: { endpoint: 'https://storage.example.com', secretRef: { name: 'creds', key: 'apiKey' } },
    });
    const asV2 = await must(CONFIGS_V2, 'cfg');
    // insecure: false is v1's default, applied when the object was created.
    expect(asV2.spec).to.deep.equal({ endpoint: 'https://storage.example.com', secretRef: { name: 'creds', key: 'apiKey' }, insecure: false });
    await kubectlOk(cp, ['patch', CONFIGS_V2, 'cfg', '-n', ns, '--type=merge', '-p', '{"spec":{"endpoint":"https://other.example.com"}}']);
    expect((await must(CONFIGS_V1, 'cfg')).spec['endpoint']).to.equal('https://other.example.com');
  });

  it("as its ServiceAccount the operator may change only its two CRDs' caBundle and write only its webhook Secret", async () => {
    const as = (args: string[], input?: string) => cp.kubectl(args, { kubeconfig: saKubeconfig, ...(input === undefined ? {} : { input }) });
    const crd = crdName(v1.StorageBucketDefinition);
    const webhookPolicy = `ValidatingAdmissionPolicy '${`bucketoperator-conversion-webhook.${opNs}`}'`;
    const mainPolicy = `ValidatingAdmissionPolicy '${`bucketoperator-least-privilege.${opNs}`}'`;
    const caBundleOnly = /only spec\.conversion\.webhook\.clientConfig\.caBundle may change/;
    const patch = (name: string, body: unknown, type = 'merge') => [
      'patch',
      'crd',
      name,
      `--type=${type}`,
      '--dry-run=server',
      '-p',
      JSON.stringify(body),
    ];

    // Allowed: the keeper's own write, a new caBundle (a dry run: nothing changes).
    const live = await getJson<CrdJson>(cp, 'crd', crd, '');
    const pem = Buffer.from(live?.spec.conversion?.webhook?.clientConfig?.caBundle ?? '', 'base64').toString();
    expect(pem).to.include('BEGIN CERTIFICATE');
    const twice = Buffer.from(pem + pem).toString('base64');
    const allowed = await as(patch(crd, { spec: { conversion: { webhook: { clientConfig: { caBundle: twice } } } } }));
    expect(allowed.code, allowed.stderr).to.equal(0);

    const secretJson = JSON.parse(await kubectlOk(cp, ['get', 'secret', SECRET, '-n', opNs, '-o', 'json'])) as {
      metadata: Record<string, unknown>;
    };
    const annotated = JSON.stringify({ ...secretJson, metadata: { ...secretJson.metadata, annotations: { note: 'x' } } });
    const otherTls = JSON.stringify({
      apiVersion: 'v1',
      kind: 'Secret',
      type: 'kubernetes.io/tls',
      metadata: { name: 'other-cert', namespace: opNs, labels: { [v1.MANAGED_BY_LABEL]: v1.MANAGED_BY_VALUE } },
      data: { 'tls.crt': Buffer.from('x').toString('base64'), 'tls.key': Buffer.from('y').toString('base64') },
    });
    const table: Array<[string, string[], RegExp, string?]> = [
      ['a label on its CRD', ['label', 'crd', crd, 'probe=1', '--dry-run=server'], caBundleOnly],
      [
        'another webhook URL',
        patch(crd, { spec: { conversion: { webhook: { clientConfig: { url: 'https://elsewhere.example/convert' } } } } }),
        caBundleOnly,
      ],
      [
        'a schema change',
        patch(crd, [{ op: 'replace', path: '/spec/versions/0/additionalPrinterColumns/0/description', value: 'changed' }], 'json'),
        caBundleOnly,
      ],
      ['another CRD', patch('widgets.example.com', { spec: {} }), /cannot (get|patch) resource "customresourcedefinitions"/],
      ['deleting its CRD', ['delete', 'crd', crd, '--dry-run=server'], /cannot delete resource "customresourcedefinitions"/],
      ['deleting the webhook Secret', ['delete', 'secret', SECRET, '-n', opNs, '--dry-run=server'], /cannot delete resource "secrets"/],
      ['an annotation on the webhook Secret', ['replace', '--dry-run=server', '-f', '-'], /carries only the label/, annotated],
      ['another TLS Secret', ['create', '--dry-run=server', '-f', '-'], /only Opaque is allowed/, otherTls],
    ];
    for (const [what, args, why, input] of table) {
      const res = await as(args, input);
      expect(res.code, `${what}: allowed`).to.not.equal(0);
      expect(res.stderr, `${what}: ${res.stderr}`).to.match(why);
      if (why === caBundleOnly || String(why).includes('carries only')) expect(res.stderr, what).to.include(webhookPolicy);
      if (String(why).includes('Opaque')) expect(res.stderr, what).to.include(mainPolicy);
    }
  });

  it("refuses bad v2 input with the CRD's own words, the quantity() size rules included", async () => {
    const inputNs = await freshNamespace(cp, 'conversion-input');
    const v2Bucket = (name: string, forProvider: Record<string, unknown>) =>
      JSON.stringify({
        apiVersion: v2.API_VERSION,
        kind: 'StorageBucket',
        metadata: { name, namespace: inputNs },
        spec: { forProvider: { region: 'us-east-1', ...forProvider }, providerConfigRef: { name: 'default' } },
      });
    const create = (name: string, forProvider: Record<string, unknown>) => cp.kubectl(['create', '-f', '-'], { input: v2Bucket(name, forProvider) });
    const sizeRange = new RegExp(`spec\\.forProvider\\.size: Invalid value.*must be more than 0 and at most ${v1.MAX_SIZE_GB}G`);
    const refusedCreates: Array<[string, RegExp]> = [
      ['10', /spec\.forProvider\.size: Invalid value: "10": spec\.forProvider\.size in body should match/],
      ['0G', sizeRange],
      [`${v1.MAX_SIZE_GB + 1}G`, sizeRange],
      ['10.5T', sizeRange],
      ['9.3Ti', sizeRange],
    ];
    for (const [size, why] of refusedCreates) {
      const res = await create(`bad-${refusedCreates.findIndex(([s2]) => s2 === size)}`, { size });
      expect(res.code, `size ${size} was accepted`).to.not.equal(0);
      expect(res.stderr, size).to.match(why);
    }
    // At the limit exactly, in another unit: 10T is 10000G.
    for (const [name, size] of [
      ['at-limit', '10T'],
      ['binary', '1500Mi'],
    ] as const) {
      const res = await create(name, { size });
      expect(res.code, `${size}: ${res.stderr}`).to.equal(0);
    }
    const patchSize = (size: string) =>
      cp.kubectl(['patch', BUCKETS_V2, 'binary', '-n', inputNs, '--type=merge', '-p', JSON.stringify({ spec: { forProvider: { size } } })]);
    // 1500Mi is 1.5728640 GB: the same quantity spelled otherwise is no shrink, 1G is.
    expect((await patchSize('1572864k')).code).to.equal(0);
    const shrink = await patchSize('1G');
    expect(shrink.code).to.not.equal(0);
    expect(shrink.stderr).to.match(/spec\.forProvider\.size: Invalid value.*can only grow/);
    const moved = await cp.kubectl([
      'patch',
      BUCKETS_V2,
      'binary',
      '-n',
      inputNs,
      '--type=merge',
      '-p',
      '{"spec":{"forProvider":{"region":"eu-west-1"}}}',
    ]);
    expect(moved.stderr).to.match(/forProvider\.region is immutable/);
    // What was accepted reads in v1 as whole GB, rounded up.
    expect((await must(BUCKETS_V1, 'binary', inputNs)).spec['sizeGB']).to.equal(2);
    expect((await must(BUCKETS_V1, 'at-limit', inputNs)).spec['sizeGB']).to.equal(v1.MAX_SIZE_GB);
  });

  it('kubectl shows v2 with its own columns and explains its fields', async () => {
    const table = await kubectlOk(cp, ['get', BUCKETS_V2, 'made-in-v2', '-n', ns]);
    expect(table.split('\n')[0]).to.match(/^NAME\s+READY\s+PHASE\s+ID\s+REGION\s+SIZE\s+AGE$/);
    expect(table.split('\n')[1]).to.match(/^made-in-v2\s+.*\s+us-east-1\s+0\.5T\s+/);
    const explained = await kubectlOk(cp, ['explain', 'storagebuckets.spec.forProvider.size', `--api-version=${v2.API_VERSION}`]);
    expect(explained).to.include('Capacity as a Kubernetes quantity with a unit');
    const v1Explained = await kubectlOk(cp, ['explain', 'storagebuckets.spec.sizeGB', `--api-version=${v1.API_VERSION}`]);
    expect(v1Explained).to.include('Capacity in GB');
  });

  it('counts the conversions by version pair', async () => {
    const text = (await op?.registry.metrics()) ?? '';
    const value = (from: string, to: string) =>
      Number(new RegExp(`^${BucketMetric.conversionRequests}\\{from="${from}",to="${to}",result="success"\\} (\\d+)$`, 'm').exec(text)?.[1] ?? 0);
    expect(value('v1', 'v2')).to.be.greaterThan(0);
    expect(value('v2', 'v1')).to.be.greaterThan(0);
  });

  it('with the webhook unreachable: v2 fails with a message naming the webhook, v1 works, and the operator keeps reconciling', async () => {
    const dead = `https://127.0.0.1:${await freePort()}/convert`;
    const setUrl = (to: string) =>
      Promise.all(
        PAIRS.map(([d]) =>
          kubectlOk(cp, [
            'patch',
            'crd',
            crdName(d),
            '--type=merge',
            '-p',
            JSON.stringify({ spec: { conversion: { webhook: { clientConfig: { url: to } } } } }),
          ]),
        ),
      );
    await setUrl(dead);
    try {
      const failed = await failedRead(cp, BUCKETS_V2, 'logs', ns);
      // The API server's words: which webhook, for which kind, and why it could not be reached.
      expect(failed).to.match(/conversion webhook for storage\.avalonhosting\.example\/v1, Kind=StorageBucket failed: .*connection refused/);
      expect((await must(BUCKETS_V1, 'logs')).spec['sizeGB']).to.equal(4);
      // The operator reads and writes v1 only: a config in its namespace still gets a status.
      await apply(cp, configWithoutSecret(v1.API_VERSION, 'while-down', opNs));
      await eventually(
        async () => {
          const cfg = await getJson<{ metadata: { generation: number }; status?: { observedGeneration?: number } }>(
            cp,
            CONFIGS_V1,
            'while-down',
            opNs,
          );
          return cfg?.status?.observedGeneration === cfg?.metadata.generation;
        },
        { description: 'the operator to reconcile a config while the webhook is unreachable', timeoutMs: 30_000 },
      );
    } finally {
      await setUrl(url);
    }
  });

  it("keeps the labels and annotations other tools put on its Secret when it replaces it, under the webhook's admission policy", async () => {
    const secretNow = () =>
      getJson<{ metadata: { labels?: Record<string, string>; annotations?: Record<string, string> }; data?: Record<string, string> }>(
        cp,
        'secret',
        SECRET,
        opNs,
      );
    const before = await eventually(secretNow, { description: 'the webhook Secret', timeoutMs: 30_000 });
    await op?.stop();
    op = undefined;
    // A backup tool's label and annotation, and a serving certificate the keeper must replace
    // (the CA certificate in its place: the serving key does not match it).
    await kubectlOk(cp, ['label', 'secret', SECRET, '-n', opNs, 'backup.example/include=true']);
    await kubectlOk(cp, ['annotate', 'secret', SECRET, '-n', opNs, 'backup.example/at=noon']);
    const broken = before.data?.['ca.crt'] ?? '';
    await kubectlOk(cp, ['patch', 'secret', SECRET, '-n', opNs, '--type=merge', '-p', JSON.stringify({ data: { 'tls.crt': broken } })]);
    op = stack!.startOperator();
    await op.manager.elected();
    const after = await eventually(
      async () => {
        const s = await secretNow();
        return s?.data?.['tls.crt'] && s.data['tls.crt'] !== broken ? s : undefined;
      },
      { description: 'the keeper to replace the serving certificate', timeoutMs: 30_000 },
    );
    expect(after.metadata.labels).to.deep.equal({ [v1.MANAGED_BY_LABEL]: v1.MANAGED_BY_VALUE, 'backup.example/include': 'true' });
    expect(after.metadata.annotations).to.deep.equal({ 'backup.example/at': 'noon' });
    expect(after.data?.['ca.crt']).to.equal(before.data?.['ca.crt']);
  });

  /**
   * The rollout of dist/v2/ over dist/: the old replica has no webhook and holds the Lease; the
   * new one has the webhook on, and no Secret and no caBundle exist yet. Before, only the
   * leader made the certificate, so the new replica stayed NotReady ("no serving certificate
   * loaded yet") for as long as the old one led, and with maxUnavailable 0 the rollout never
   * finished. Now the new replica makes the Secret, has the CRDs trust its CA and is Ready,
   * while the old replica keeps the Lease.
   */
  it('a rollout from a replica without the webhook: the new replica makes its certificate, gets it trusted and is Ready while the old one leads', async () => {
    await op?.stop();
    op = undefined;
    await kubectlOk(cp, ['delete', 'secret', SECRET, '-n', opNs, '--ignore-not-found']);
    for (const [def] of PAIRS) {
      await kubectlOk(cp, [
        'patch',
        'crd',
        crdName(def),
        '--type=merge',
        '-p',
        '{"spec":{"conversion":{"webhook":{"clientConfig":{"caBundle":null}}}}}',
      ]);
    }
    await apply(cp, {
      apiVersion: v1.API_VERSION,
      kind: 'StorageBucket',
      metadata: { name: 'rolled', namespace: ns },
      spec: { region: 'eu-west-1', sizeGB: 1, providerRef: { name: 'default' } },
    });
    const replica = (identity: string, more: Partial<OperatorOptions>) =>
      startOperator({
        restConfig: saConfig,
        logger: createLogger({ level: process.env['CONVERSION_LOG'] === '1' ? 'debug' : 'silent' }),
        leaderElection: true,
        leaderElectionNamespace: opNs,
        leaderElectionId: 'conversion-rollout',
        identity,
        watchNamespace: opNs,
        clusterId: 'conversion-test',
        metricsBindAddress: '0',
        healthProbeBindAddress: '0',
        ...more,
      });
    const old = replica('old-replica-without-webhook', {});
    let next: RunningOperator | undefined;
    try {
      await old.manager.elected();
      next = replica('new-replica-with-webhook', {
        healthProbeBindAddress: '127.0.0.1:0',
        conversionWebhook: {
          port: stack!.port,
          host: '127.0.0.1',
          namespace: opNs,
          serviceName: 'bucketoperator-webhook',
          secretName: SECRET,
          ipAddresses: ['127.0.0.1'],
        },
      });
      const health = (await next.manager.listening()).health;
      // What the kubelet asks: the new Pod's readiness probe.
      await eventually(async () => (await fetch(`http://127.0.0.1:${health?.port}/readyz`)).ok || undefined, {
        description: "the new replica's /readyz to pass",
        timeoutMs: 60_000,
      });
      // Useful, not only Ready: the API server trusts it, so a v2 read converts through it.
      const asV2 = await eventually(() => get(BUCKETS_V2, 'rolled'), {
        description: 'the bucket read as v2 through the new replica',
        timeoutMs: 30_000,
      });
      expect(asV2.spec['forProvider']).to.deep.include({ region: 'eu-west-1', size: '1G' });
      const ca = (await getJson<{ data?: Record<string, string> }>(cp, 'secret', SECRET, opNs))?.data?.['ca.crt'];
      for (const [def] of PAIRS) {
        const bundle = Buffer.from(
          (await getJson<CrdJson>(cp, 'crd', crdName(def), ''))?.spec.conversion?.webhook?.clientConfig?.caBundle ?? '',
          'base64',
        );
        expect(bundle.toString(), `${crdName(def)} trusts the new CA`).to.include(
          Buffer.from(ca ?? '', 'base64')
            .toString()
            .trim(),
        );
      }
      // The old replica still leads: nothing waited for the Lease.
      expect(old.manager.isLeader()).to.equal(true);
      expect(next.manager.isLeader()).to.equal(false);
    } finally {
      await next?.stop();
      await old.stop();
    }
    op = stack!.startOperator();
  });

  /**
   * A whole CA rotation under v2 traffic through the API server, three leader-elected replicas
   * behind one address. Once the new CA has joined the bundle a follower is stopped (SIGTERM's
   * path: drain, release the Lease), then the leader, so the last replica's keeper must take
   * over mid-rotation and finish it: switch the serving certificate to the new CA and drop the
   * old one. Asserts zero failed conversions.
   */
  async function rotationUnderTraffic(): Promise<void> {
    // The first operator goes; three replicas behind one address take over with short-lived
    // certificates (the Secret made again: the first one's CA lives a year), so a whole CA
    // rotation happens within a minute.
    await op?.stop();
    op = undefined;
    await kubectlOk(cp, ['delete', 'secret', SECRET, '-n', opNs, '--ignore-not-found']);
    await apply(cp, {
      apiVersion: v1.API_VERSION,
      kind: 'StorageBucket',
      metadata: { name: 'rotating', namespace: ns },
      spec: { region: 'eu-west-1', sizeGB: 1, providerRef: { name: 'default' } },
    });
    // An 8 s overlap (the shortest checkCertPolicy allows with these lives is under 8.4 s): a
    // CI machine under load may take seconds to hand the API server a new caBundle.
    const policy = { caValidityMs: 60_000, servingValidityMs: 50_000, renewFraction: 2 / 3, overlapMs: 8_000 };
    const backends = [await freePort(), await freePort(), await freePort()];
    const replicas = backends.map((port, i) =>
      startOperator({
        restConfig: saConfig,
        logger: createLogger({ level: process.env['CONVERSION_LOG'] === '1' ? 'debug' : 'silent' }),
        leaderElection: true,
        leaderElectionNamespace: opNs,
        leaderElectionId: 'conversion-rotation',
        identity: `rotation-test-replica-${i}`,
        watchNamespace: opNs,
        clusterId: 'conversion-test',
        metricsBindAddress: '0',
        healthProbeBindAddress: '0',
        conversionWebhook: {
          port,
          host: '127.0.0.1',
          namespace: opNs,
          serviceName: 'bucketoperator-webhook',
          secretName: SECRET,
          ipAddresses: ['127.0.0.1'],
          policy,
          drainMs: 2_000,
        },
      }),
    );
    // kube-proxy's part: each new connection to the address goes to a ready replica, and stays there.
    let next = 0;
    const sockets = new Set<import('node:net').Socket>();
    const ready = async (i: number) => (await replicas[i]!.manager.readyz.run({ only: 'conversion-webhook' }))?.[0]?.ok === true;
    const proxy: Server = createServer((client) => {
      client.pause();
      void (async () => {
        const candidates: number[] = [];
        for (const i of replicas.keys()) if (await ready(i)) candidates.push(i);
        const pick = candidates[next++ % Math.max(1, candidates.length)];
        if (pick === undefined) return client.destroy();
        const upstream = connect(backends[pick]!, '127.0.0.1');
        sockets.add(client).add(upstream);
        upstream.on('error', () => client.destroy());
        client.on('error', () => upstream.destroy());
        client.pipe(upstream).pipe(client);
        client.resume();
      })();
    });
    await new Promise<void>((resolve) => proxy.listen(Number(new URL(url).port), '127.0.0.1', resolve));
    const client = new KubeClient({ restConfig: cp.restConfig(), userAgent: 'conversion-traffic', maxRetries: 0, qps: 0 });
    const secretCas = async () =>
      Buffer.from((await getJson<{ data?: Record<string, string> }>(cp, 'secret', SECRET, opNs))?.data?.['ca.crt'] ?? '', 'base64')
        .toString()
        .match(/-----BEGIN CERTIFICATE-----[\s\S]*?-----END CERTIFICATE-----/g) ?? [];
    const bucketsV2 = { group: v2.GROUP, version: v2.VERSION, kind: 'StorageBucket', plural: 'storagebuckets', namespaced: true };
    try {
      // Until the API server trusts the new Secret's CA, v2 reads fail: wait for that before counting.
      await eventually(
        async () =>
          (await client.get(bucketsV2, ns, 'rotating').then(
            () => true,
            () => false,
          )) || undefined,
        {
          description: 'a v2 read through the replicas',
          timeoutMs: 60_000,
        },
      );
      const [firstCa] = await secretCas();
      const traffic = conversionTraffic(3, (i) => (i % 5 === 0 ? client.list(bucketsV2, { namespace: ns }) : client.get(bucketsV2, ns, 'rotating')));
      // The rotation starts when the CA is two thirds through its minute: a second CA joins the bundle.
      await eventually(async () => (await secretCas()).length === 2 || undefined, { description: 'a new CA beside the old', timeoutMs: 90_000 });
      // SIGTERM's path for a follower, then for the leader, while the rotation is under way.
      const leader = replicas.findIndex((r) => r.manager.isLeader());
      expect(leader, 'a leader among the replicas').to.be.greaterThan(-1);
      const follower = replicas.findIndex((_, i) => i !== leader);
      await replicas[follower]!.stop();
      await replicas[leader]!.stop();
      const survivor = replicas.find((_, i) => i !== leader && i !== follower)!;
      await eventually(
        async () => {
          const cas = await secretCas();
          return (cas.length === 1 && cas[0] !== firstCa) || undefined;
        },
        { description: 'the old CA dropped', timeoutMs: 60_000 },
      );
      await new Promise((r) => setTimeout(r, 3_000));
      const { ok, failures } = await traffic.stop();
      expect(failures).to.deep.equal([]);
      expect(ok).to.be.greaterThan(100);
      // The one left leads: it finished the rotation.
      expect(survivor.manager.isLeader()).to.equal(true);
    } finally {
      client.close();
      await Promise.all(replicas.map((r) => r.stop()));
      for (const socket of sockets) socket.destroy();
      await new Promise((resolve) => proxy.close(resolve));
    }
  }

  it('a CA rotation under constant conversion traffic, a follower and then the leader stopped during it and the last replica finishing it: zero failed conversions', async function () {
    this.timeout(240_000);
    await rotationUnderTraffic();
  });

  it('rolls back to v1 only: server-side apply is refused while the operator owns the caBundle, and passes once the stanza is removed; objects keep their data', async () => {
    for (const [def] of PAIRS) {
      const refused = await cp.kubectl([...SERVER_SIDE_APPLY], { input: JSON.stringify(renderCrd(def, { ...COMMON_LABELS })) });
      expect(refused.code, 'the rollback was applied with the caBundle left behind').to.not.equal(0);
      expect(refused.stderr).to.match(/spec\.conversion\.webhookClientConfig: Forbidden/);
      await applyV1Only(cp, def);
      const crd = JSON.parse(await kubectlOk(cp, ['get', 'crd', crdName(def), '-o', 'json'])) as {
        spec: { versions: Array<{ name: string }>; conversion?: unknown };
      };
      expect(crd.spec.versions.map((v) => v.name)).to.deep.equal(['v1']);
      expect(crd.spec.conversion).to.deep.equal({ strategy: 'None' });
    }
    // Written in v2 before, read in v1 now: whole GB in sizeGB, the v2 spelling in the annotation.
    const made = await must(BUCKETS_V1, 'made-in-v2');
    expect(made.spec['sizeGB']).to.equal(500);
    expect(userAnnotations(made)).to.deep.equal({ [v1.V2_SIZE_ANNOTATION]: '0.5T' });
  });
});
