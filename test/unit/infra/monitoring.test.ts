import { driftScanFailures } from '../../../operator/bucket/drift-scanner';
import { expect } from 'chai';
import { execFileSync } from 'node:child_process';
import { readdirSync, readFileSync } from 'node:fs';
import { join } from 'node:path';
import { pino } from 'pino';
import { Registry } from 'prom-client';
import { parse, parseAllDocuments } from 'yaml';
import { REPO_ROOT } from '../../../infra/generate';
import { operatorDashboard } from '../../../infra/grafana-dashboard';
import { operatorRuleGroups, type RuleGroup } from '../../../infra/prometheus-rule';
import { OPERATOR_METRIC_NAMES, RuntimeMetric } from '../../../operator/api/metric-names';
import { BucketLifecycleMetrics } from '../../../operator/bucket/lifecycle-metrics';
import { ConversionMetrics } from '../../../operator/conversion/metrics';
import { ProviderClients } from '../../../operator/provider-client';
import { Metrics } from '../../../operator/runtime/metrics';
import { WriteFailureReporter } from '../../../operator/runtime/write-failures';
import { CONTROLLER_RUNTIME_METRIC_NAMES } from '../../support/metric-names';
import { promtool } from '../../support/test-tools';

const DIST = join(REPO_ROOT, 'dist');
const MONITORING = join(DIST, 'monitoring');
const RULES_FILE = join(MONITORING, 'prometheus', 'bucketoperator.rules.yaml');
const RULES_TEST = join(REPO_ROOT, 'test', 'monitoring', 'bucketoperator.rules.test.yaml');

type Obj = {
  kind: string;
  metadata: { name: string; labels?: Record<string, string> };
  spec?: Record<string, unknown>;
  data?: Record<string, string>;
};

function docs(file: string): Obj[] {
  return parseAllDocuments(readFileSync(join(MONITORING, file), 'utf8')).map((d) => d.toJSON() as Obj);
}

const PROMQL_WORDS = new Set(['and', 'or', 'unless', 'bool', 'offset', 'inf', 'nan', 'by', 'without', 'on', 'ignoring', 'group_left', 'group_right']);

/** Metric names a PromQL expression reads: identifiers that are neither functions, keywords nor labels. */
function metricNames(expr: string): string[] {
  const bare = expr
    .replace(/"(?:[^"\\]|\\.)*"/g, '""')
    .replace(/\{[^}]*\}/g, '')
    .replace(/\[[^\]]*\]/g, '')
    .replace(/\b(?:by|without|on|ignoring|group_left|group_right)\s*\([^)]*\)/g, '');
  const names = new Set<string>();
  for (const m of bare.matchAll(/\b([a-zA-Z_:][a-zA-Z0-9_:]*)\b(\s*\()?/g)) {
    if (m[1] === undefined || m[2] || PROMQL_WORDS.has(m[1]) || /^\d/.test(m[1])) continue;
    names.add(m[1]);
  }
  return [...names];
}

/** Every name the operator's registries really serve, histogram and summary series included. */
async function servedNames(): Promise<Set<string>> {
  const registry = new Registry();
  const metrics = new Metrics({ registry });
  new WriteFailureReporter({ logger: pino({ level: 'silent' }), metrics });
  const clients = new ProviderClients({ registry });
  driftScanFailures(registry);
  new BucketLifecycleMetrics({ registry, informer: { cache: { list: () => [] }, addEventHandler: () => undefined } });
  new ConversionMetrics({ registry });
  clients.close();
  const out = new Set<string>();
  for (const m of await registry.getMetricsAsJSON()) {
    out.add(m.name);
    if (String(m.type) === 'histogram') for (const s of ['_bucket', '_sum', '_count']) out.add(`${m.name}${s}`);
  }
  return out;
}

function expressions(groups: RuleGroup[], dashboard: Record<string, unknown>): Record<string, string> {
  const out: Record<string, string> = {};
  for (const g of groups) for (const r of g.rules) out[`alert ${r.alert}`] = r.expr;
  const panels = dashboard['panels'] as Array<{ title: string; targets: Array<{ expr: string; refId: string }> }>;
  for (const p of panels) for (const t of p.targets) out[`panel "${p.title}" ${t.refId}`] = t.expr;
  return out;
}

describe('monitoring (dist/monitoring/)', () => {
  const groups = parse(readFileSync(RULES_FILE, 'utf8')) as { groups: RuleGroup[] };

  it('passes promtool check rules', () => {
    const out = execFileSync(promtool(), ['check', 'rules', RULES_FILE], { encoding: 'utf8' });
    expect(out).to.match(/SUCCESS: 5 rules found/);
  });

  it('passes promtool test rules (every alert fires on its input series)', () => {
    const out = execFileSync(promtool(), ['test', 'rules', RULES_TEST], { encoding: 'utf8', stdio: ['ignore', 'pipe', 'pipe'] });
    expect(out).to.match(/SUCCESS/);
  });

  it('has a promtool test for every alert', () => {
    const tests = parse(readFileSync(RULES_TEST, 'utf8')) as {
      tests: Array<{ alert_rule_test: Array<{ alertname: string; exp_alerts: unknown[] }> }>;
    };
    const fired = new Set(tests.tests.flatMap((t) => t.alert_rule_test.filter((a) => a.exp_alerts.length > 0).map((a) => a.alertname)));
    expect([...fired].sort()).to.deep.equal(groups.groups.flatMap((g) => g.rules.map((r) => r.alert)).sort());
  });

  it('ships the same rules as a PrometheusRule, with a ServiceMonitor, behind a Kustomization', () => {
    const objs = docs('prometheus-operator.yaml');
    expect(objs.map((o) => o.kind).sort()).to.deep.equal(['PrometheusRule', 'ServiceMonitor']);
    expect(objs.find((o) => o.kind === 'PrometheusRule')?.spec?.['groups']).to.deep.equal(groups.groups);
    const k = parse(readFileSync(join(MONITORING, 'Kustomization'), 'utf8')) as { resources: string[] };
    expect(k.resources).to.deep.equal(['grafana-dashboard.yaml', 'prometheus-operator.yaml']);
  });

  it('ships the dashboard as a sidecar ConfigMap and as plain JSON', () => {
    const [cm] = docs('grafana-dashboard.yaml');
    if (!cm) throw new Error('grafana-dashboard.yaml holds no document');
    expect(cm.kind).to.equal('ConfigMap');
    expect(cm.metadata.labels?.['grafana_dashboard']).to.equal('1');
    const json = readFileSync(join(MONITORING, 'grafana', 'bucketoperator.json'), 'utf8');
    expect(cm.data?.['bucketoperator.json']).to.equal(json);
    expect((JSON.parse(json) as { uid: string }).uid).to.equal('bucketoperator');
  });

  it('keeps dist/ itself free of Prometheus Operator kinds, so kubectl apply -f dist/ needs no extra CRDs', () => {
    const top = readdirSync(DIST).filter((f) => f.endsWith('.yaml'));
    for (const f of top) expect(readFileSync(join(DIST, f), 'utf8'), f).to.not.match(/monitoring\.coreos\.com/);
    const k = parse(readFileSync(join(DIST, 'Kustomization'), 'utf8')) as { resources: string[] };
    expect(k.resources.some((r) => r.includes('monitoring'))).to.equal(false);
  });

  describe('queries use only metric names the operator serves', () => {
    let served = new Set<string>();
    before(async () => {
      served = await servedNames();
    });

    it("every declared name is registered by the operator's modules", () => {
      expect(OPERATOR_METRIC_NAMES.filter((n) => !served.has(n))).to.deep.equal([]);
    });

    it('the runtime names are the controller-runtime names dashboards expect', () => {
      const processNames = new Set(['process_cpu_seconds_total', 'process_resident_memory_bytes']);
      expect(Object.values(RuntimeMetric).filter((n) => !CONTROLLER_RUNTIME_METRIC_NAMES.includes(n) && !processNames.has(n))).to.deep.equal([]);
    });

    for (const [where, expr] of Object.entries(expressions(operatorRuleGroups(), operatorDashboard()))) {
      it(where, () => {
        const names = metricNames(expr);
        expect(names, expr).to.not.deep.equal([]);
        expect(
          names.filter((n) => !served.has(n)),
          expr,
        ).to.deep.equal([]);
      });
    }

    it('the name scanner finds names and skips functions, keywords and labels', () => {
      expect(
        metricNames('sum by (le, operation) (rate(a_bucket{job="x",le="+Inf"}[5m])) > 2 and b offset 5m or absent(c{d="e"}) / 2^20').sort(),
      ).to.deep.equal(['a_bucket', 'b', 'c']);
    });
  });

  it('rejects out-of-range thresholds with the field named', () => {
    expect(() => operatorRuleGroups({ errorRatio: 2 })).to.throw(/props\.errorRatio/);
    expect(() => operatorRuleGroups({ providerLatencyP99Seconds: 0 })).to.throw(/props\.providerLatencyP99Seconds/);
  });
});
