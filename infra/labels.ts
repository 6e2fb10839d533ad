/** Labels every object of the operator carries, so `kubectl get -l` and kustomize find them. */
export const COMMON_LABELS: Readonly<Record<string, string>> = {
  'app.kubernetes.io/name': 'bucketoperator',
  'app.kubernetes.io/part-of': 'bucketoperator',
  'app.kubernetes.io/managed-by': 'cdk8s',
};

/** Labels of the manager's Pods and the selector of its Deployment and Service. */
export const MANAGER_SELECTOR: Readonly<Record<string, string>> = {
  'app.kubernetes.io/name': 'bucketoperator',
  'app.kubernetes.io/component': 'controller-manager',
};
