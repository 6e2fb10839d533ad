/**
 * Shared by the Argo CD and Flux health tests: where the health checks and their testdata
 * live, and how to run a health.lua through Debian's lua5.1 as Argo CD would.
 */
import { execFileSync } from 'node:child_process';
import { existsSync, readdirSync, readFileSync } from 'node:fs';
import { join, resolve } from 'node:path';
import { parse } from 'yaml';
import { celeval, lua51 } from './test-tools';

/** The repository root. */
export const REPO_ROOT = resolve(__dirname, '..', '..');

/** Argo CD's `resource_customizations` folder of this repository. */
export const CUSTOMIZATIONS_DIR = join(REPO_ROOT, 'gitops', 'argocd', 'resource_customizations');

/** Flux healthCheckExprs, as they go under a Kustomization's `spec.healthCheckExprs`. */
export const FLUX_EXPRS_FILE = join(REPO_ROOT, 'gitops', 'flux', 'health-check-exprs.yaml');

/** One `<group>/<Kind>` folder in Argo CD's layout. */
export interface Customization {
  readonly group: string;
  readonly kind: string;
  readonly dir: string;
  /** Text of health.lua. */
  readonly script: string;
}

/** The health status Argo CD's Lua VM returns. */
export interface HealthStatus {
  readonly status: string;
  readonly message?: string;
}

/** One entry of a health_test.yaml. */
export interface HealthTest {
  readonly healthStatus: HealthStatus;
  readonly inputPath: string;
}

/** A Kubernetes object as plain data. */
export type KubeObjectData = Record<string, unknown>;

/** Every `<group>/<Kind>` folder that holds a health.lua. */
export function customizations(): Customization[] {
  const out: Customization[] = [];
  for (const group of readdirSync(CUSTOMIZATIONS_DIR).sort()) {
    for (const kind of readdirSync(join(CUSTOMIZATIONS_DIR, group)).sort()) {
      const dir = join(CUSTOMIZATIONS_DIR, group, kind);
      const lua = join(dir, 'health.lua');
      if (existsSync(lua)) out.push({ group, kind, dir, script: readFileSync(lua, 'utf8') });
    }
  }
  return out;
}

/** The tests of a customization's health_test.yaml. */
export function healthTests(c: Customization): HealthTest[] {
  const doc = parse(readFileSync(join(c.dir, 'health_test.yaml'), 'utf8')) as { tests: HealthTest[] };
  return doc.tests;
}

/** Reads one testdata object. */
export function readObject(path: string): KubeObjectData {
  return parse(readFileSync(path, 'utf8')) as KubeObjectData;
}

/**
 * A Lua table constructor for `value`, built like Argo CD's decodeValue: objects become
 * string-keyed tables, arrays sequences, null nothing (nil).
 */
export function luaLiteral(value: unknown): string {
  if (value === null || value === undefined) return 'nil';
  if (typeof value === 'boolean') return String(value);
  if (typeof value === 'number') {
    if (!Number.isFinite(value)) throw new Error(`cannot pass ${value} to Lua`);
    return String(value);
  }
  if (typeof value === 'string') {
    // Decimal escapes for every byte outside printable ASCII keep any UTF-8 intact.
    let out = '"';
    for (const b of Buffer.from(value, 'utf8')) {
      out += b >= 0x20 && b < 0x7f && b !== 0x22 && b !== 0x5c ? String.fromCharCode(b) : `\\${b}`;
    }
    return `${out}"`;
  }
  if (Array.isArray(value)) return `{${value.map(luaLiteral).join(', ')}}`;
  if (typeof value === 'object') {
    const fields = Object.entries(value as Record<string, unknown>)
      .filter(([, v]) => v !== null && v !== undefined)
      .map(([k, v]) => `[${luaLiteral(k)}] = ${luaLiteral(v)}`);
    return `{${fields.join(', ')}}`;
  }
  throw new Error(`cannot pass a ${typeof value} to Lua`);
}

const HARNESS = join(REPO_ROOT, 'test', 'unit', 'gitops', 'argocd-health-harness.lua');

// Argo CD's isValidHealthStatusCode.
const VALID_STATUSES = new Set(['Healthy', 'Progressing', 'Degraded', 'Suspended', 'Missing', 'Unknown']);

/** Runs a health.lua on `obj` through lua5.1 and returns what Argo CD would report. */
export function runHealthLua(scriptPath: string, obj: KubeObjectData): HealthStatus {
  const out = execFileSync(lua51(), [HARNESS, scriptPath], { input: `return ${luaLiteral(obj)}\n`, encoding: 'utf8' });
  const result = JSON.parse(out) as { status?: string; message?: string; error?: string };
  if (result.error !== undefined) throw new Error(`health.lua failed: ${result.error}`);
  if (result.status === undefined || !VALID_STATUSES.has(result.status)) {
    return { status: 'Unknown', message: 'Lua returned an invalid health status' };
  }
  // Argo CD's HealthStatus omits an empty message, as health_test.yaml files do.
  return result.message ? { status: result.status, message: result.message } : { status: result.status };
}

/** kstatus results Flux can report for a custom resource. */
export type FluxStatus = 'Current' | 'InProgress' | 'Failed' | 'Unknown';

/** One entry of a Kustomization's `spec.healthCheckExprs`. */
export interface HealthCheckExprs {
  readonly apiVersion: string;
  readonly kind: string;
  readonly current: string;
  readonly inProgress?: string;
  readonly failed?: string;
}

/** The expressions of gitops/flux/health-check-exprs.yaml. */
export function fluxExprs(): HealthCheckExprs[] {
  return parse(readFileSync(FLUX_EXPRS_FILE, 'utf8')) as HealthCheckExprs[];
}

/**
 * Evaluates each object with cel-go as kustomize-controller does. An evaluation error over
 * a field the object does not have yet (a fresh object has no status) is what Flux's
 * generic status reader reports as Unknown, and it keeps polling.
 */
export function evaluateFluxHealth(objects: KubeObjectData[]): FluxStatus[] {
  const all = fluxExprs();
  const cases = objects.map((object) => {
    const e = all.find((x) => x.apiVersion === object['apiVersion'] && x.kind === object['kind']);
    if (!e) throw new Error(`no healthCheckExprs for ${String(object['apiVersion'])} ${String(object['kind'])}`);
    return { exprs: { current: e.current, inProgress: e.inProgress, failed: e.failed }, object };
  });
  const out = execFileSync(celeval(), [], { input: JSON.stringify({ cases }), encoding: 'utf8' });
  return (JSON.parse(out) as Array<{ status?: FluxStatus; error?: string }>).map((r) => {
    if (r.status) return r.status;
    if (r.error && /no such attribute|no such key/.test(r.error)) return 'Unknown';
    throw new Error(`CEL evaluation failed: ${r.error ?? 'no result'}`);
  });
}
