/**
 * `kubectl bucket report`: a support bundle in one `.tar.gz`. It holds, per namespace, the
 * StorageBuckets and BucketProviderConfigs (as served, in the preferred version), the config
 * Secrets and owned Secrets (key names, never values), owned Services and Events; a summary
 * with `why` for each bucket; and the operator's own Deployments, Pods, Services, each
 * container's log and the metrics (through the API server's Service proxy, or
 * `--metrics-url`), selected by the labels its manifests give them (infra/labels.ts), never
 * the rest of its namespace. Every object passes through cli/redact.ts (Secret data, env
 * values, URL userinfo, last-applied annotations), and logs lose URL userinfo. What could not
 * be read is listed in errors.txt instead of failing the report.
 */
import { writeFileSync } from 'node:fs';
import { resolve } from 'node:path';
import { stringify } from 'yaml';
import { MANAGER_SELECTOR } from '../../infra/labels';
import type { BucketProviderConfig, StorageBucket } from '../../operator/api/v1';
import { SECRET, SERVICE } from '../../operator/bucket/kinds';
import { MANAGED_BY_SELECTOR } from '../../operator/bucket/owned-identity';
import { EVENT_KIND, type EventObject } from '../../operator/runtime/event-object';
import type { KubeObject, ResourceKind } from '../../operator/runtime/types';
import type { Options } from '../args';
import { allAsV1, asV1 } from '../as-v1';
import { diagnose, whyParagraph } from '../diagnose';
import { ExitCode } from '../exit-codes';
import { apiFailure, directReads, getText, listServed, lookup, snapshotOf, type Kube } from '../kube';
import { redact, redactUserinfo } from '../redact';
import { tarGz, type TarEntry } from '../tar';
import { getUrlText } from '../url-text';
import type { Terminal } from '../terminal';
import { buildTree } from '../trace';

const POD: ResourceKind = { group: '', version: 'v1', kind: 'Pod', plural: 'pods', namespaced: true };
const DEPLOYMENT: ResourceKind = { group: 'apps', version: 'v1', kind: 'Deployment', plural: 'deployments', namespaced: true };

/** The label selector of the operator's Deployment, Pods and Services (what its Deployment selects on). */
export const OPERATOR_SELECTOR = Object.entries(MANAGER_SELECTOR)
  .map(([k, v]) => `${k}=${v}`)
  .join(',');

/** At most this many buckets get a `why` in summary.txt (each costs a few reads). */
export const SUMMARY_LIMIT = 200;

/** Lines of each container's log the bundle keeps. */
export const LOG_TAIL_LINES = 5000;

/** The bundle's name for `now`, e.g. `bucket-report-20261202T031500Z`. */
export function bundleName(now: Date): string {
  return `bucket-report-${now
    .toISOString()
    .replace(/[-:]/g, '')
    .replace(/\.\d+Z$/, 'Z')}`;
}

/** What a report collected; `bundleEntries` turns it into files. */
export interface Collected {
  readonly now: Date;
  readonly context: string;
  readonly scope: string;
  /** Files under `namespaces/<ns>/`, by namespace: name -> objects (redacted before they get here). */
  readonly namespaces: ReadonlyMap<string, ReadonlyMap<string, readonly unknown[]>>;
  readonly summary: readonly string[];
  /** Files under `operator/`. */
  readonly operator: ReadonlyMap<string, string>;
  readonly errors: readonly string[];
}

function yamlList(items: readonly unknown[]): string {
  return stringify({ apiVersion: 'v1', kind: 'List', items: items.map(redact) });
}

/** The files of the bundle (pure); every object passes through `redact` once more on the way out. */
export function bundleEntries(c: Collected): TarEntry[] {
  const root = bundleName(c.now);
  const entries: TarEntry[] = [
    {
      name: `${root}/README.txt`,
      content: [
        `kubectl bucket report, ${c.now.toISOString()}`,
        `context: ${c.context}`,
        `scope: ${c.scope}`,
        '',
        'summary.txt                  why, for each StorageBucket',
        'namespaces/<ns>/*.yaml       StorageBuckets, BucketProviderConfigs, Secrets (values redacted), Services, Events',
        `operator/                    the operator's Deployments, Pods, Services (${OPERATOR_SELECTOR}), container logs and metrics, when readable`,
        '',
        'Redacted everywhere: Secret values, env values, userinfo in URLs, last-applied-configuration annotations.',
        'errors.txt                   what could not be read, and why',
        '',
      ].join('\n'),
    },
    { name: `${root}/summary.txt`, content: c.summary.length > 0 ? c.summary.join('\n\n') + '\n' : 'no StorageBuckets in scope\n' },
  ];
  for (const [ns, files] of [...c.namespaces].sort(([a], [b]) => a.localeCompare(b))) {
    for (const [file, items] of files) entries.push({ name: `${root}/namespaces/${ns}/${file}.yaml`, content: yamlList(items) });
  }
  for (const [file, content] of c.operator) entries.push({ name: `${root}/operator/${file}`, content });
  entries.push({ name: `${root}/errors.txt`, content: c.errors.length > 0 ? c.errors.join('\n') + '\n' : 'none\n' });
  return entries;
}

function failure(what: string, err: unknown, server: string): string {
  return `${what}: ${apiFailure(err, server).message}`;
}

async function collectNamespace(kube: Kube, ns: string, errors: string[]): Promise<Map<string, unknown[]>> {
  const files = new Map<string, unknown[]>();
  const keep = async (file: string, what: string, read: () => Promise<KubeObject[]>): Promise<KubeObject[]> => {
    try {
      const items = await read();
      files.set(file, items);
      return items;
    } catch (err) {
      errors.push(failure(`list ${what} in ${ns}`, err, kube.server));
      return [];
    }
  };
  const list = (kind: ResourceKind, selector: string) =>
    keep(kind.plural, kind.plural, async () => (await kube.client.list<KubeObject>(kind, { namespace: ns, labelSelector: selector })).items);
  const served = (file: string, kinds: readonly ResourceKind[]) =>
    keep(file, file, async () => (await listServed(kube, kinds, { namespace: ns })).items);
  const [, rawConfigs, owned] = await Promise.all([
    served('storagebuckets', kube.served.buckets),
    served('bucketproviderconfigs', kube.served.configs),
    list(SECRET, MANAGED_BY_SELECTOR),
    list(SERVICE, MANAGED_BY_SELECTOR),
  ]);
  // The configs' credential Secrets: only their metadata and key names go into the bundle.
  const configs = await allAsV1<BucketProviderConfig>(rawConfigs).catch((err: unknown) => {
    errors.push(failure(`convert bucketproviderconfigs in ${ns}`, err, kube.server));
    return [];
  });
  const names = [...new Set(configs.map((c) => c.spec.secretRef.name))];
  const credentials: unknown[] = [];
  for (const name of names) {
    try {
      const l = await lookup<KubeObject>(kube, SECRET, ns, name);
      if (l.state === 'found') credentials.push(redact({ ...l.object, kind: 'Secret' }));
      else errors.push(`Secret ${ns}/${name}: ${l.state === 'missing' ? 'not found' : l.message}`);
    } catch (err) {
      errors.push(failure(`get Secret ${ns}/${name}`, err, kube.server));
    }
  }
  files.set('secrets', [...owned.map(redact), ...credentials]);
  try {
    const events = (await kube.client.list<EventObject>(EVENT_KIND, { namespace: ns })).items;
    files.set(
      'events',
      events.filter((e) => e.regarding?.['kind'] === 'StorageBucket' || e.regarding?.['kind'] === 'BucketProviderConfig'),
    );
  } catch (err) {
    errors.push(failure(`list events in ${ns}`, err, kube.server));
  }
  return files;
}

interface PodJson extends KubeObject {
  spec?: { containers?: { name: string }[] };
}

interface ServiceJson extends KubeObject {
  spec?: { ports?: { name?: string }[] };
}

async function collectOperator(kube: Kube, opts: Options, errors: string[]): Promise<Map<string, string>> {
  const ns = opts.operatorNamespace;
  const files = new Map<string, string>();
  // Only the operator's own objects: its namespace may hold others (a shared system namespace).
  const list = async (kind: ResourceKind): Promise<KubeObject[]> => {
    try {
      return (await kube.client.list<KubeObject>(kind, { namespace: ns, labelSelector: OPERATOR_SELECTOR })).items;
    } catch (err) {
      errors.push(failure(`list ${kind.plural} in ${ns}`, err, kube.server));
      return [];
    }
  };
  const [deployments, pods, services] = await Promise.all([list(DEPLOYMENT), list(POD), list(SERVICE)]);
  if (deployments.length === 0 && pods.length === 0) errors.push(`no Deployment or Pod labelled ${OPERATOR_SELECTOR} in ${ns}`);
  files.set('deployments.yaml', yamlList(deployments));
  files.set('pods.yaml', yamlList(pods));
  files.set('services.yaml', yamlList(services));
  for (const pod of pods as PodJson[]) {
    for (const c of pod.spec?.containers ?? []) {
      const name = pod.metadata?.name ?? '';
      const path = `/api/v1/namespaces/${encodeURIComponent(ns)}/pods/${encodeURIComponent(name)}/log?container=${encodeURIComponent(c.name)}&tailLines=${LOG_TAIL_LINES}`;
      try {
        files.set(`logs/${name}_${c.name}.log`, redactUserinfo(await getText(kube, path)));
      } catch (err) {
        errors.push(failure(`logs of Pod ${ns}/${name} container ${c.name}`, err, kube.server));
      }
    }
  }
  if (opts.metricsUrl) {
    try {
      files.set('metrics.txt', await getUrlText(opts.metricsUrl));
    } catch (err) {
      errors.push(`metrics from ${opts.metricsUrl}: ${err instanceof Error ? err.message : String(err)}`);
    }
  } else {
    const metrics = (services as ServiceJson[]).filter((s) => s.spec?.ports?.some((p) => p.name === 'metrics'));
    for (const svc of metrics) {
      const name = svc.metadata?.name ?? '';
      try {
        files.set(
          `metrics-${name}.txt`,
          await getText(kube, `/api/v1/namespaces/${encodeURIComponent(ns)}/services/${encodeURIComponent(name)}:metrics/proxy/metrics`),
        );
      } catch (err) {
        errors.push(failure(`metrics through Service ${ns}/${name}`, err, kube.server));
      }
    }
    if (metrics.length === 0) errors.push(`no Service labelled ${OPERATOR_SELECTOR} with a metrics port in ${ns}`);
  }
  return files;
}

/** `report`. */
export async function report(kube: Kube, opts: Options, term: Terminal, now: () => Date = () => new Date()): Promise<ExitCode> {
  const at = now();
  const errors: string[] = [];
  let namespaces: string[];
  if (opts.allNamespaces) {
    try {
      const [buckets, configs] = await Promise.all([listServed(kube, kube.served.buckets), listServed(kube, kube.served.configs)]);
      namespaces = [...new Set([...buckets.items, ...configs.items].map((o) => o.metadata?.namespace ?? ''))].filter(Boolean).sort();
    } catch (err) {
      throw apiFailure(err, kube.server);
    }
  } else {
    namespaces = [opts.namespace ?? kube.namespace];
  }
  const perNamespace = new Map<string, Map<string, unknown[]>>();
  const summary: string[] = [];
  for (const ns of namespaces) {
    const files = await collectNamespace(kube, ns, errors);
    perNamespace.set(ns, files);
    const reads = directReads(kube);
    for (const b of ((files.get('storagebuckets') ?? []) as StorageBucket[]).slice(0, Math.max(0, SUMMARY_LIMIT - summary.length))) {
      try {
        const s = await snapshotOf(kube, await asV1<StorageBucket>(b), reads, () => at);
        summary.push(whyParagraph(s, diagnose(s, buildTree(s))));
      } catch (err) {
        errors.push(`why ${ns}/${b.metadata.name ?? ''}: ${err instanceof Error ? err.message : String(err)}`);
      }
    }
  }
  const operator = await collectOperator(kube, opts, errors);
  const collected: Collected = {
    now: at,
    context: `${kube.context} of ${kube.source} (server ${kube.server})`,
    scope: opts.allNamespaces ? `all namespaces (${namespaces.length})` : `namespace ${namespaces[0] ?? ''}`,
    namespaces: perNamespace,
    summary,
    operator,
    errors,
  };
  const file = resolve(opts.file ?? `${bundleName(at)}.tar.gz`);
  const entries = bundleEntries(collected);
  writeFileSync(file, tarGz(entries, at), { mode: 0o600 });
  term.out(`wrote ${file}: ${entries.length} files, ${summary.length} StorageBuckets, ${errors.length} items not readable (see errors.txt)\n`);
  return ExitCode.OK;
}
