/**
 * Waiting for a ValidatingAdmissionPolicy to be enforced. The API server loads policies and
 * bindings through an informer, so a policy just applied is enforced a moment later; tests
 * wait for a request the policy refuses instead of sleeping.
 */
import { type ControlPlane } from './control-plane';
import { eventually } from './eventually';

/**
 * Resolves once a server-side dry-run create of an unlabelled Secret in `namespace`, made as
 * `username` (impersonated by the admin), is refused by a ValidatingAdmissionPolicy. `username`
 * must be allowed by RBAC to create Secrets there, so only the policy can refuse it; the dry
 * run writes nothing whether or not the policy is in force yet.
 */
export async function waitForSecretPolicy(cp: ControlPlane, username: string, namespace: string, timeoutMs = 30_000): Promise<void> {
  await eventually(
    async () => {
      const res = await cp.kubectl([
        'create',
        'secret',
        'generic',
        'admission-policy-probe',
        '-n',
        namespace,
        '--from-literal=probe=1',
        '--dry-run=server',
        `--as=${username}`,
      ]);
      if (res.code === 0) return undefined;
      if (res.stderr.includes('ValidatingAdmissionPolicy')) return true;
      throw new Error(`probe refused by something other than the policy: ${res.stderr.trim()}`);
    },
    { description: `the admission policy to refuse ${username} an unlabelled Secret in ${namespace}`, timeoutMs, intervalMs: 200 },
  );
}
