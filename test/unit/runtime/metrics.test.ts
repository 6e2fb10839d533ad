import { FakeClock } from '../../support/fake-clock';
import { expect } from 'chai';
import { Counter, Registry } from 'prom-client';
import { Metrics } from '../../../operator/runtime/metrics';
import { WorkQueue } from '../../../operator/runtime/workqueue';

import { CONTROLLER_RUNTIME_METRIC_NAMES } from '../../support/metric-names';

const NAMES = [...CONTROLLER_RUNTIME_METRIC_NAMES, 'nodejs_eventloop_lag_seconds'];

describe('Metrics', () => {
  it('registers controller-runtime, workqueue, leader election and Node process metrics', async () => {
    const m = new Metrics();
    const text = await m.text();
    for (const name of NAMES) expect(text, name).to.match(new RegExp(`^# TYPE ${name} `, 'm'));
  });

  it('uses its own registry, so two instances coexist', async () => {
    const a = new Metrics();
    const b = new Metrics();
    a.controller('x').reconciled('success', 0.1);
    expect(await a.text()).to.include('controller_runtime_reconcile_total{controller="x",result="success"} 1');
    expect(await b.text()).to.not.include('controller="x"');
  });

  it('accepts a registry others register on, and can leave out Node metrics', async () => {
    const registry = new Registry();
    const m = new Metrics({ registry, defaultMetrics: false });
    new Counter({ name: 'rest_client_requests_total', help: 'requests', registers: [m.registry] });
    const text = await registry.metrics();
    expect(text).to.include('rest_client_requests_total');
    expect(text).to.not.include('process_cpu_user_seconds_total');
  });

  it('emits labelled series for controllers, queues and the leader gauge', async () => {
    const m = new Metrics({ defaultMetrics: false });
    const c = m.controller('widgets');
    c.reconciled('error', 0.2);
    c.incErrors();
    c.incTerminalErrors();
    c.setMaxConcurrentReconciles(4);
    m.setLeader('my-lease', true);
    const clock = new FakeClock();
    const q = new WorkQueue({ name: 'widgets', clock, metrics: m });
    q.add('a');
    await q.get();
    clock.advance(1500);
    const text = await m.text();
    for (const line of [
      'controller_runtime_reconcile_total{controller="widgets",result="error"} 1',
      'controller_runtime_reconcile_total{controller="widgets",result="requeue"} 0',
      'controller_runtime_reconcile_errors_total{controller="widgets"} 1',
      'controller_runtime_terminal_reconcile_errors_total{controller="widgets"} 1',
      'controller_runtime_max_concurrent_reconciles{controller="widgets"} 4',
      'controller_runtime_reconcile_time_seconds_count{controller="widgets"} 1',
      'workqueue_adds_total{name="widgets"} 1',
      'workqueue_depth{name="widgets"} 0',
      'workqueue_depth_by_priority{name="widgets",priority="0"} 0',
      'workqueue_unfinished_work_seconds{name="widgets"} 1.5',
      'workqueue_longest_running_processor_seconds{name="widgets"} 1.5',
      'leader_election_master_status{name="my-lease"} 1',
    ]) {
      expect(text).to.include(line);
    }
  });
});
