/**
 * The one real world a model-e2e run drives: a control plane with dist/ applied, two mock
 * provider processes (the model's two endpoints), each knowing the keys of the model's two
 * accounts (`ACCOUNT:KEY` entries, so a key means the same account at either endpoint), and
 * the operator process (the image build, the Deployment's flags with leader election, under
 * its ServiceAccount) with a short poll and drift interval so a run settles quickly.
 */
import { randomBytes } from 'node:crypto';
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { KubeClient } from '../../../operator/runtime/client';
import { startControlPlane, type ControlPlane } from '../control-plane';
import { applyDist } from '../dist';
import { startOperatorProcess, type OperatorProcess } from '../operator-process';
import { startProviderProcess, type ProviderProcess } from '../provider-process';
import { CREDENTIALS, ENDPOINTS, type CredentialName } from '../model/world';

/** Settings of {@link startE2eStack}. */
export interface E2eStackOptions {
  /** @default 200 */
  readonly activationDelayMs?: number;
  /** @default '300ms' */
  readonly pollInterval?: string;
  /** @default '2s' */
  readonly driftInterval?: string;
}

/** The running world. */
export interface E2eStack {
  readonly cp: ControlPlane;
  /** Admin client (the user's and the harness's reads and writes). */
  readonly admin: KubeClient;
  /** One provider process per model endpoint, in the order of {@link ENDPOINTS}. */
  readonly providers: readonly ProviderProcess[];
  /** The API key of each credential Secret name (valid at every provider). */
  readonly keys: Readonly<Record<CredentialName, string>>;
  readonly operator: OperatorProcess;
  /** Directory with `operator.log`. */
  readonly dir: string;
  /** Stops the operator (SIGTERM) and starts it again as the same Pod. */
  restartOperator(): Promise<void>;
  /** Stops every process; keeps the operator log when `keepLogs`. */
  stop(keepLogs: boolean): Promise<void>;
}

const OPERATOR_SA = { namespace: 'bucketoperator-system', name: 'bucketoperator-controller-manager' } as const;

/** Starts the control plane, dist/, both providers and the operator. */
export async function startE2eStack(opts: E2eStackOptions = {}): Promise<E2eStack> {
  const cp = await startControlPlane();
  const started: ProviderProcess[] = [];
  try {
    await applyDist(cp);
    const dir = mkdtempSync(join(tmpdir(), 'bucketoperator-model-e2e-'));
    const keys = Object.fromEntries(Object.entries(CREDENTIALS).map(([name, c]) => [name, `${c.key}-${randomBytes(6).toString('hex')}`])) as Record<
      CredentialName,
      string
    >;
    const apiKeys = (Object.keys(CREDENTIALS) as CredentialName[]).map((name) => `${CREDENTIALS[name].account}:${keys[name]}`);
    for (let i = 0; i < ENDPOINTS.length; i++) {
      started.push(await startProviderProcess({ activationDelayMs: opts.activationDelayMs ?? 200, apiKeys }));
    }
    const kubeconfig = await cp.serviceAccountKubeconfig(OPERATOR_SA.namespace, OPERATOR_SA.name, { expirationSeconds: 86_400 });
    const podName = `bucketoperator-model-e2e-${randomBytes(4).toString('hex')}`;
    const operatorOptions = {
      kubeconfig,
      logFile: join(dir, 'operator.log'),
      pollInterval: opts.pollInterval ?? '300ms',
      driftInterval: opts.driftInterval ?? '2s',
      podName,
    };
    let operator = await startOperatorProcess(operatorOptions);
    const admin = new KubeClient({ restConfig: cp.restConfig() });
    return {
      cp,
      admin,
      providers: started,
      keys,
      get operator() {
        return operator;
      },
      dir,
      async restartOperator() {
        await operator.kill('SIGTERM');
        operator = await startOperatorProcess(operatorOptions);
      },
      async stop(keepLogs) {
        await operator.kill('SIGTERM');
        await Promise.all(started.map((p) => p.stop()));
        await cp.stop();
        if (keepLogs) console.log(`model-e2e: operator log kept in ${dir}`);
        else rmSync(dir, { recursive: true, force: true });
      },
    };
  } catch (err) {
    await Promise.all(started.map((p) => p.stop()));
    await cp.stop();
    throw err;
  }
}
