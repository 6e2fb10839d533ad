/**
 * The cdk8s App: one chart per file, named so that `kubectl apply -f dist/` (alphabetical)
 * applies them in the order a user must: CRDs, Namespace, RBAC, the admission policy that
 * confines the operator (in force before the operator starts), manager. No chart has a
 * namespace, because cdk8s stamps a chart's namespace onto cluster-scoped objects too.
 */
import { App, Chart, YamlOutputType } from 'cdk8s';
import { OperatorAdmissionPolicy } from './admission-policy';
import { OperatorCrds } from './crds';
import { OperatorManager, type OperatorManagerProps } from './manager';
import { OperatorNamespace } from './namespace';
import { OperatorRbac, type RbacMode } from './rbac';

/** Options for {@link buildApp}. */
export interface BuildAppOptions {
  /** Directory the YAML is written to. */
  readonly outdir: string;
  /**
   * RBAC mode.
   * @default 'cluster'
   */
  readonly rbacMode?: RbacMode;
  /** Manager settings. */
  readonly manager?: OperatorManagerProps;
}

/** Chart ids, which become the file names in dist/; the prefix fixes the apply order. */
export const CHART_IDS = ['00-crds', '01-namespace', '02-rbac', '03-admission-policy', '04-manager'] as const;

/** Builds the App; call `.synth()` to write the files. */
export function buildApp(opts: BuildAppOptions): App {
  const app = new App({ outdir: opts.outdir, yamlOutputType: YamlOutputType.FILE_PER_CHART, outputFileExtension: '.yaml' });
  const chart = (id: string) => new Chart(app, id, { disableResourceNameHashes: true });
  const [crdsId, namespaceId, rbacId, policyId, managerId] = CHART_IDS;
  new OperatorCrds(chart(crdsId), 'crds');
  const namespace = new OperatorNamespace(chart(namespaceId), 'namespace', { name: opts.manager?.namespace });
  const rbacChart = chart(rbacId);
  const policyChart = chart(policyId);
  const manager = new OperatorManager(chart(managerId), 'manager', { ...opts.manager, namespace: namespace.name });
  new OperatorRbac(rbacChart, 'rbac', {
    operatorNamespace: manager.namespace,
    serviceAccountName: manager.serviceAccountName,
    mode: opts.rbacMode ?? 'cluster',
    watchNamespace: opts.rbacMode === 'namespace' ? opts.manager?.watchNamespace : undefined,
  });
  new OperatorAdmissionPolicy(policyChart, 'admission-policy', { operatorNamespace: manager.namespace, serviceAccountName: manager.serviceAccountName });
  return app;
}
