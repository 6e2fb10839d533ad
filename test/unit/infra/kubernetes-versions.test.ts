/**
 * The support matrix's decisions, without I/O: which Kubernetes versions the construct accepts,
 * and how the objects stored before a storage flip get rewritten on each minor
 * (StorageVersionMigrations from 1.37, the documented `kubectl` rewrite before, refusal where
 * a migration is asked for explicitly and cannot be served). Then the same through
 * `BucketOperator`'s `kubernetesVersion`, as rendered.
 */
import { expect } from 'chai';
import {
  API_FEATURES,
  DEFAULT_KUBERNETES_VERSION,
  kubernetesVersionProblem,
  NEWEST_SUPPORTED,
  OLDEST_SUPPORTED,
  parseKubernetesVersion,
  storageMigrationPlan,
  SUPPORTED_KUBERNETES,
  type StorageMigrationPlan,
  type StorageMigrationRequest,
} from '../../../infra/kubernetes-versions';
import type { BucketOperatorProps } from '../../../infra/operator';
import { OperatorStorageMigration } from '../../../infra/storage-migration';
import { ofKind, synthOperator } from '../../support/synth-operator';
import { testChart } from '../../support/test-app';

const SVM = { kind: 'storage-version-migration', apiVersion: 'storagemigration.k8s.io/v1' } as const;
const v = (text: string) => parseKubernetesVersion(text) ?? { major: 0, minor: 0 };

describe('Kubernetes versions: parsing and what is accepted', () => {
  const parses: Record<string, { input: unknown; want: ReturnType<typeof parseKubernetesVersion> }> = {
    'a minor': { input: '1.36', want: { major: 1, minor: 36 } },
    'a minor with v': { input: 'v1.35', want: { major: 1, minor: 35 } },
    'a release': { input: '1.37.2', want: { major: 1, minor: 37 } },
    'a release with v': { input: 'v1.36.3', want: { major: 1, minor: 36 } },
    'a pre-release is not a version': { input: 'v1.37.0-rc.1', want: undefined },
    'a major alone is not a version': { input: '1', want: undefined },
    'a number is not a string': { input: 1.36, want: undefined },
    'text is not a version': { input: 'latest', want: undefined },
  };
  for (const [name, tc] of Object.entries(parses)) {
    it(`parses: ${name}`, () => expect(parseKubernetesVersion(tc.input)).to.deep.equal(tc.want));
  }

  const accepted: Record<string, { input: unknown; want: string | undefined }> = {
    'the oldest supported minor': { input: '1.35', want: undefined },
    'a supported release': { input: 'v1.36.3', want: undefined },
    'the newest supported minor': { input: '1.37', want: undefined },
    // Every API used is GA by 1.37 and stays; refusing 1.38 would only block an upgrade.
    'a minor newer than the newest tested': { input: '1.38', want: undefined },
    'a minor older than the oldest supported, which has all the APIs': {
      input: '1.34',
      want: 'props.kubernetesVersion is 1.34, older than the oldest supported Kubernetes minor (supported: 1.35 to 1.37)',
    },
    'a minor that also lacks APIs the rendering uses': {
      input: 'v1.29.4',
      want:
        'props.kubernetesVersion is 1.29, older than the oldest supported Kubernetes minor (supported: 1.35 to 1.37); it lacks ' +
        'ValidatingAdmissionPolicy (admissionregistration.k8s.io/v1) (from 1.30), CRD selectableFields (from 1.32)',
    },
    'not a version': { input: 'latest', want: "props.kubernetesVersion must be a Kubernetes version such as '1.36' or 'v1.36.3', got 'latest'" },
    'another major': { input: '2.0', want: "props.kubernetesVersion must be a Kubernetes version such as '1.36' or 'v1.36.3', got '2.0'" },
  };
  for (const [name, tc] of Object.entries(accepted)) {
    it(`accepts or refuses: ${name}`, () => expect(kubernetesVersionProblem('props.kubernetesVersion', tc.input)).to.equal(tc.want));
  }

  it('the matrix runs oldest to newest, the default is the newest, and every feature but the migration is served by the oldest', () => {
    expect(SUPPORTED_KUBERNETES.map((s) => s.minor)).to.deep.equal(['1.35', '1.36', '1.37']);
    for (const s of SUPPORTED_KUBERNETES) expect(s.tested.startsWith(`v${s.minor}.`), s.tested).to.equal(true);
    expect(DEFAULT_KUBERNETES_VERSION).to.equal(`${NEWEST_SUPPORTED.major}.${NEWEST_SUPPORTED.minor}`);
    expect(OLDEST_SUPPORTED).to.deep.equal({ major: 1, minor: 35 });
    expect(API_FEATURES.filter((f) => v(f.since).minor > OLDEST_SUPPORTED.minor).map((f) => [f.name, f.optional])).to.deep.equal([
      ['StorageVersionMigration (storagemigration.k8s.io/v1)', true],
    ]);
  });
});

describe('Kubernetes versions: how stored objects are rewritten after a storage flip', () => {
  const cases: Record<string, { args: StorageMigrationRequest; want: StorageMigrationPlan['kind'] | StorageMigrationPlan }> = {
    '1.37, v2 stored: StorageVersionMigrations': { args: { kubernetes: v('1.37'), storageVersion: 'v2', migrateStorage: undefined }, want: SVM },
    'a newer minor, v2 stored: StorageVersionMigrations': {
      args: { kubernetes: v('1.40'), storageVersion: 'v2', migrateStorage: undefined },
      want: SVM,
    },
    '1.37, back to v1 with migrateStorage: StorageVersionMigrations': {
      args: { kubernetes: v('1.37'), storageVersion: 'v1', migrateStorage: true },
      want: SVM,
    },
    '1.37, v1 stored: nothing to migrate': { args: { kubernetes: v('1.37'), storageVersion: 'v1', migrateStorage: undefined }, want: 'none' },
    '1.37, v2 stored, migrateStorage false: left to the user': {
      args: { kubernetes: v('1.37'), storageVersion: 'v2', migrateStorage: false },
      want: 'none',
    },
    '1.36, v2 stored: the documented rewrite': {
      args: { kubernetes: v('1.36'), storageVersion: 'v2', migrateStorage: undefined },
      want: 'rewrite-documented',
    },
    '1.35, v2 stored: the documented rewrite': {
      args: { kubernetes: v('1.35'), storageVersion: 'v2', migrateStorage: undefined },
      want: 'rewrite-documented',
    },
    '1.36, v1 stored: nothing to migrate': { args: { kubernetes: v('1.36'), storageVersion: 'v1', migrateStorage: undefined }, want: 'none' },
    '1.36, migrateStorage false: left to the user': {
      args: { kubernetes: v('1.36'), storageVersion: 'v2', migrateStorage: false },
      want: 'none',
    },
    '1.36, migrateStorage true: refused': {
      args: { kubernetes: v('1.36'), storageVersion: 'v1', migrateStorage: true },
      want: 'refused',
    },
  };
  for (const [name, tc] of Object.entries(cases)) {
    it(name, () => {
      const got = storageMigrationPlan(tc.args);
      if (typeof tc.want === 'string') expect(got.kind).to.equal(tc.want);
      else expect(got).to.deep.equal(tc.want);
    });
  }

  it('a refusal names the prop, the minor, the API and where the alternative is documented', () => {
    const got = storageMigrationPlan({ kubernetes: v('1.35'), storageVersion: 'v2', migrateStorage: true });
    expect(got).to.deep.equal({
      kind: 'refused',
      reason:
        'props.conversionWebhook.migrateStorage asks for StorageVersionMigrations, which Kubernetes 1.35 does not serve ' +
        '(storagemigration.k8s.io/v1 is in-tree from 1.37): leave it unset and rewrite the stored objects as docs/v2.md, ' +
        "'Storage migration before Kubernetes 1.37', describes",
    });
  });
});

describe('BucketOperator kubernetesVersion, as rendered', () => {
  const migrations = (props: BucketOperatorProps) => ofKind(synthOperator(props), 'StorageVersionMigration').map((m) => m['metadata'].name as string);
  const storingV2: BucketOperatorProps = { conversionWebhook: { storageVersion: 'v2' } };

  it('renders the same objects for the default and for 1.37, migrations included', () => {
    expect(synthOperator({ ...storingV2, kubernetesVersion: 'v1.37.2' })).to.deep.equal(synthOperator(storingV2));
    expect(migrations(storingV2)).to.have.length(2);
  });

  it('below 1.37 leaves the migrations out and renders everything else unchanged', () => {
    const all = synthOperator(storingV2).filter((o) => o['kind'] !== 'StorageVersionMigration');
    for (const kubernetesVersion of ['1.35', 'v1.36.3']) {
      expect(migrations({ ...storingV2, kubernetesVersion }), kubernetesVersion).to.deep.equal([]);
      expect(synthOperator({ ...storingV2, kubernetesVersion }), kubernetesVersion).to.deep.equal(all);
    }
  });

  it('refuses an explicit migration below 1.37 and a minor older than the oldest supported, naming the prop', () => {
    expect(() => synthOperator({ conversionWebhook: { storageVersion: 'v2', migrateStorage: true }, kubernetesVersion: '1.36' })).to.throw(
      /^BucketOperator: props\.conversionWebhook\.migrateStorage asks for StorageVersionMigrations, which Kubernetes 1\.36 does not serve/,
    );
    expect(() => synthOperator({ kubernetesVersion: '1.31' })).to.throw(
      /^BucketOperator: props\.kubernetesVersion is 1\.31, older than the oldest supported Kubernetes minor/,
    );
    expect(() => synthOperator({ kubernetesVersion: 'stable' })).to.throw('BucketOperator: props.kubernetesVersion must be a Kubernetes version');
  });

  it('OperatorStorageMigration alone refuses a minor that does not serve it', () => {
    expect(() => new OperatorStorageMigration(testChart(), 'm', { version: 'v2', kubernetesVersion: '1.36' })).to.throw(
      'OperatorStorageMigration: Kubernetes 1.36 does not serve storagemigration.k8s.io/v1 (in-tree from 1.37)',
    );
    expect(new OperatorStorageMigration(testChart(), 'm', { version: 'v2', kubernetesVersion: '1.37' }).migrations).to.have.length(2);
  });
});
