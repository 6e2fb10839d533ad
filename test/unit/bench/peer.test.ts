import { expect } from 'chai';
import type { StorageBucket } from '../../../operator/api/v1';
import { ratios, type SubjectRow } from '../../../bench/compare';
import { fillTemplate, isReady, parseReadyRule, SEED_GO_TEMPLATE } from '../../../bench/peer';

describe('bench: the side-by-side peer', () => {
  it('fills every placeholder of the seed-go command, and refuses an unknown one before anything starts', () => {
    const values = {
      binary: '/cache/peer/operator',
      kubeconfig: '/tmp/kc',
      'metrics-port': '1',
      'health-port': '2',
      'provider-url': 'http://127.0.0.1:3',
      'provider-key': 'k',
      workers: '8',
      'provider-qps': '500',
      'provider-burst': '1000',
    };
    const command = fillTemplate(SEED_GO_TEMPLATE, values);
    expect(command).to.not.match(/[{}]/);
    expect(command).to.include('--max-concurrent-reconciles 8').and.include('--metrics-bind-address 127.0.0.1:1');
    expect(() => fillTemplate('run {kubecnofig}', values)).to.throw(/unknown placeholder \{kubecnofig\}/);
  });

  it('counts a bucket ready by the condition or by the phase the rule names', () => {
    const b = (status: StorageBucket['status']) => ({ status }) as StorageBucket;
    const condition = parseReadyRule('condition=Ready');
    const phase = parseReadyRule('phase=Active');
    const ready = b({ phase: 'Active', conditions: [{ type: 'Ready', status: 'True', reason: 'Available', message: '', lastTransitionTime: '' }] });
    const activeOnly = b({ phase: 'Active' });
    expect([isReady(condition, ready), isReady(condition, activeOnly), isReady(phase, activeOnly), isReady(phase, b(undefined))]).to.deep.equal([
      true,
      false,
      true,
      false,
    ]);
    expect(() => parseReadyRule('ready')).to.throw(/condition=<Type> or phase=<Phase>/);
  });

  it('divides ours by the peer per scenario and size, numbers both have, never by zero', () => {
    const rows: SubjectRow[] = [
      { scenario: 'backlog', n: 1000, subject: 'ours', figures: { 'all Ready s': 40, 'left at provider': 0, note: 'x' } },
      { scenario: 'backlog', n: 1000, subject: 'seed-go', figures: { 'all Ready s': 50, 'left at provider': 0 } },
      { scenario: 'backlog', n: 3000, subject: 'ours', figures: { 'all Ready s': 90 } },
    ];
    expect(ratios(rows, 'ours', 'seed-go')).to.deep.equal([
      { scenario: 'backlog', n: 1000, figures: [{ figure: 'all Ready s', ours: 40, peer: 50, ratio: 0.8 }] },
    ]);
  });
});
