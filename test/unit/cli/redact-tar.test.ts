import { expect } from 'chai';
import { execFileSync } from 'node:child_process';
import { mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { bundleEntries, bundleName } from '../../../cli/commands/report';
import { LAST_APPLIED_ANNOTATION, REDACTED, redact } from '../../../cli/redact';
import { tarGz } from '../../../cli/tar';
import { API_KEY, NOW, credentialSecret } from './fixtures';

const B64 = Buffer.from(API_KEY).toString('base64');

const PROXY = 'http://proxy-user:proxy-pass@proxy.corp:3128';
const PROXY_REDACTED = `http://${REDACTED}@proxy.corp:3128`;

/** A container as a Deployment or Pod spec holds it: env values, a token in an arg's URL. */
function container(name: string) {
  return {
    name,
    image: 'bucketoperator:dev',
    command: ['/manager', `--provider-url=https://svc:${API_KEY}@storage.example.com/v1`],
    args: ['--leader-elect', `--proxy=${PROXY}`, '--metrics-bind-address=:8080', 'https://storage.example.com/path?x=a@b'],
    env: [
      { name: 'HTTPS_PROXY', value: PROXY },
      { name: 'API_TOKEN', value: API_KEY },
      { name: 'POD_NAMESPACE', valueFrom: { fieldRef: { fieldPath: 'metadata.namespace' } } },
    ],
  };
}

/** The same container as it must reach the bundle: names kept, values gone, URLs without userinfo. */
function redactedContainer(name: string) {
  return {
    name,
    image: 'bucketoperator:dev',
    command: ['/manager', `--provider-url=https://${REDACTED}@storage.example.com/v1`],
    args: ['--leader-elect', `--proxy=${PROXY_REDACTED}`, '--metrics-bind-address=:8080', 'https://storage.example.com/path?x=a@b'],
    env: [
      { name: 'HTTPS_PROXY', value: REDACTED },
      { name: 'API_TOKEN', value: REDACTED },
      { name: 'POD_NAMESPACE', valueFrom: { fieldRef: { fieldPath: 'metadata.namespace' } } },
    ],
  };
}

const lastApplied = (obj: unknown) => ({ [LAST_APPLIED_ANNOTATION]: JSON.stringify(obj), keep: 'me' });

const cases: Record<string, { obj: unknown; want: unknown }> = {
  'a Secret keeps metadata, type and key names; values, managedFields and the last-applied copy go': {
    obj: {
      kind: 'Secret',
      type: 'Opaque',
      metadata: {
        name: 's',
        labels: { a: 'b' },
        managedFields: [{ manager: 'kubectl' }],
        annotations: { [LAST_APPLIED_ANNOTATION]: `{"stringData":{"apiKey":"${API_KEY}"}}`, keep: 'me' },
      },
      data: { apiKey: B64, other: 'eA==' },
      stringData: { plain: API_KEY },
    },
    want: {
      kind: 'Secret',
      type: 'Opaque',
      metadata: { name: 's', labels: { a: 'b' }, annotations: { [LAST_APPLIED_ANNOTATION]: REDACTED, keep: 'me' } },
      data: { apiKey: REDACTED, other: REDACTED },
      stringData: { plain: REDACTED },
    },
  },
  'a Pod: env values, URL userinfo in command and args, last-applied; names and references stay': {
    obj: {
      kind: 'Pod',
      metadata: { name: 'manager-0', annotations: lastApplied({ spec: { containers: [container('manager')] } }), managedFields: [] },
      spec: { initContainers: [container('init')], containers: [container('manager')] },
    },
    want: {
      kind: 'Pod',
      metadata: { name: 'manager-0', annotations: { [LAST_APPLIED_ANNOTATION]: REDACTED, keep: 'me' } },
      spec: { initContainers: [redactedContainer('init')], containers: [redactedContainer('manager')] },
    },
  },
  "a Deployment: its Pod template's containers, and its own last-applied": {
    obj: {
      kind: 'Deployment',
      metadata: { name: 'manager', annotations: lastApplied({ env: PROXY }) },
      spec: { replicas: 2, template: { metadata: { labels: { app: 'x' } }, spec: { containers: [container('manager')] } } },
    },
    want: {
      kind: 'Deployment',
      metadata: { name: 'manager', annotations: { [LAST_APPLIED_ANNOTATION]: REDACTED, keep: 'me' } },
      spec: { replicas: 2, template: { metadata: { labels: { app: 'x' } }, spec: { containers: [redactedContainer('manager')] } } },
    },
  },
  'a StorageBucket: last-applied redacted too, the rest kept': {
    obj: { kind: 'StorageBucket', metadata: { name: 'b', managedFields: [], annotations: { [LAST_APPLIED_ANNOTATION]: '{}' } }, spec: { sizeGB: 1 } },
    want: { kind: 'StorageBucket', metadata: { name: 'b', annotations: { [LAST_APPLIED_ANNOTATION]: REDACTED } }, spec: { sizeGB: 1 } },
  },
  'an Event whose note quotes a URL with credentials': {
    obj: { kind: 'Event', metadata: { name: 'e' }, note: `cannot reach ${PROXY}/x: timeout` },
    want: { kind: 'Event', metadata: { name: 'e' }, note: `cannot reach ${PROXY_REDACTED}/x: timeout` },
  },
  'a Secret without data': { obj: { kind: 'Secret', metadata: { name: 's' } }, want: { kind: 'Secret', metadata: { name: 's' } } },
  'not an object': { obj: 'text', want: 'text' },
};

describe('kubectl bucket: redaction and the bundle archive', () => {
  for (const [name, { obj, want }] of Object.entries(cases)) {
    it(name, () => {
      const out = redact(obj);
      expect(out).to.deep.equal(want);
      expect(JSON.stringify(out)).to.not.include(API_KEY).and.not.include(B64).and.not.include('proxy-pass');
      expect(redact(out), 'redacting twice changes nothing more').to.deep.equal(want);
    });
  }

  it('writes a .tar.gz that tar lists and extracts, long names included', () => {
    const dir = mkdtempSync(join(tmpdir(), 'cli-tar-'));
    try {
      const long = `${'d'.repeat(90)}/${'e'.repeat(60)}/file.yaml`;
      const file = join(dir, 'a.tar.gz');
      writeFileSync(
        file,
        tarGz(
          [
            { name: 'r/one.txt', content: 'one\n' },
            { name: long, content: Buffer.from('two') },
            { name: 'r/empty', content: '' },
          ],
          new Date('2026-01-01T00:00:00Z'),
        ),
      );
      expect(execFileSync('tar', ['-tzf', file], { encoding: 'utf8' }).trim().split('\n')).to.deep.equal(['r/one.txt', long, 'r/empty']);
      execFileSync('tar', ['-xzf', file, '-C', dir]);
      expect([
        readFileSync(join(dir, 'r/one.txt'), 'utf8'),
        readFileSync(join(dir, long), 'utf8'),
        readFileSync(join(dir, 'r/empty'), 'utf8'),
      ]).to.deep.equal(['one\n', 'two', '']);
    } finally {
      rmSync(dir, { recursive: true, force: true });
    }
  });

  it('lays the bundle out under one directory and redacts Secrets again on the way out', () => {
    const entries = bundleEntries({
      now: NOW,
      context: 'admin of /k',
      scope: 'namespace team-a',
      namespaces: new Map([['team-a', new Map([['secrets', [{ ...credentialSecret(), kind: 'Secret' }]]])]]),
      summary: ['StorageBucket team-a/logs is Ready.'],
      operator: new Map([['metrics.txt', 'm 1\n']]),
      errors: ['logs of Pod x: no host'],
    });
    const root = bundleName(NOW);
    expect(root).to.equal('bucket-report-20261202T030000Z');
    expect(entries.map((e) => e.name)).to.deep.equal([
      `${root}/README.txt`,
      `${root}/summary.txt`,
      `${root}/namespaces/team-a/secrets.yaml`,
      `${root}/operator/metrics.txt`,
      `${root}/errors.txt`,
    ]);
    const all = entries.map((e) => e.content.toString()).join('\n');
    expect(all).to.include('apiKey: <redacted>').and.not.include(API_KEY).and.not.include(B64);
  });
});
