/**
 * The shape in which each part of the operator declares the Kubernetes permissions it uses,
 * so the RBAC manifests are generated from declarations kept next to the code that needs them.
 */

/** One RBAC rule and where it applies. */
export interface PermissionRule {
  readonly apiGroups: readonly string[];
  readonly resources: readonly string[];
  readonly verbs: readonly string[];
  /** Only these objects, by name. @default all */
  readonly resourceNames?: readonly string[];
  /**
   * `watched`: in the namespaces the operator manages (cluster-wide in cluster mode);
   * `own`: only in the namespace the operator runs in (e.g. its leader-election Lease);
   * `cluster`: cluster-scoped objects, in either mode (always narrowed by `resourceNames`).
   */
  readonly scope: 'watched' | 'own' | 'cluster';
  /** Why the operator needs it; rendered as a comment-free audit trail in tests and docs. */
  readonly reason: string;
}
