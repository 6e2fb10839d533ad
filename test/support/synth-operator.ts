/** `BucketOperator` rendered for tests that read its manifests. */
import { Testing } from 'cdk8s';
import { BucketOperator, type BucketOperatorProps } from '../../infra/operator';
import { testChart } from './test-app';

/** A rendered manifest. */
export type Manifest = Record<string, any>; // eslint-disable-line @typescript-eslint/no-explicit-any -- synthesized YAML is untyped; tests index into it freely

/** Every manifest `BucketOperator(props)` renders. */
export function synthOperator(props: BucketOperatorProps): Manifest[] {
  const chart = testChart();
  new BucketOperator(chart, 'operator', props);
  return Testing.synth(chart) as Manifest[];
}

/** The manifests of `kind` (named `name`, when given). */
export function ofKind(objs: readonly Manifest[], kind: string, name?: string): Manifest[] {
  return objs.filter((o) => o['kind'] === kind && (name === undefined || o['metadata'].name === name));
}
