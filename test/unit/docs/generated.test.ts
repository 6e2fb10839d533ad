/**
 * The generated blocks of README.md, docs/ and bench/README.md are what `npm run docs` renders
 * from the code today (as the dist/ staleness test does for manifests), and the renderers read
 * everything they claim to.
 */
import { expect } from 'chai';
import { RuntimeMetric, BucketMetric } from '../../../operator/api/metric-names';
import { OPERATOR_FLAGS } from '../../../operator/flags';
import { REPO_ROOT, generatedBlocks, renderDocuments, type Rendered } from '../../../scripts/docs';
import { deploymentArgs } from '../../../scripts/docs/flags';
import { blockNames, fillBlocks, table } from '../../../scripts/docs/markdown';
import { registeredMetrics, type MetricRow } from '../../../scripts/docs/metrics';

describe('generated docs', function () {
  // Reading the metric registrations type-checks operator/ once: seconds, not milliseconds.
  this.timeout(120_000);
  let blocks: Record<string, string> = {};
  let rendered: Rendered[] = [];
  let metrics: MetricRow[] = [];
  before(() => {
    blocks = generatedBlocks(REPO_ROOT);
    rendered = renderDocuments(REPO_ROOT, blocks);
    metrics = registeredMetrics(REPO_ROOT);
  });

  it('every generated block is current (run npm run docs when this fails)', () => {
    const stale = rendered.filter((r) => r.current !== r.fresh);
    expect(
      stale.map((r) => r.file),
      `stale: ${stale.map((r) => r.file).join(', ')}; run npm run docs`,
    ).to.deep.equal([]);
  });

  it('publishes every block somewhere, and the README holds its numbers as blocks', () => {
    const held = new Set(rendered.flatMap((r) => blockNames(r.current)));
    expect([...held]).to.include.members(Object.keys(blocks));
    const readme = rendered.find((r) => r.file === 'README.md')?.current ?? '';
    expect(blockNames(readme)).to.include.members(['test-counts', 'headline-figures']);
  });

  it('finds every metric the alerts and dashboards name among the registrations under operator/', () => {
    const registered = new Set(metrics.map((m) => m.name));
    // prom-client's collectDefaultMetrics registers the process_* ones; it is not a registration of ours.
    const ours = [...Object.values(RuntimeMetric), ...Object.values(BucketMetric)].filter((n) => !n.startsWith('process_'));
    expect(ours.filter((n) => !registered.has(n))).to.deep.equal([]);
  });

  it('reads the labels of a metric registered through a helper at its call site', () => {
    const failures = metrics.find((m) => m.name === BucketMetric.writeFailures);
    expect(failures).to.include({ type: 'counter', file: 'operator/runtime/write-failures.ts' });
    expect(failures?.labels).to.deep.equal(['resource', 'verb', 'code']);
  });

  it('knows every flag the rendered Deployments pass', () => {
    const known = new Set<string>(OPERATOR_FLAGS.map((f) => f.name));
    for (const folder of ['dist', 'dist/v2', 'dist/v2-stored', 'dist/v2-back-to-v1']) {
      expect(
        [...deploymentArgs(REPO_ROOT, folder).keys()].filter((f) => !known.has(f)),
        folder,
      ).to.deep.equal([]);
    }
  });
});

describe('generated blocks in Markdown', () => {
  const cases: Record<string, { text: string; want: string | RegExp }> = {
    'replaces what is between the markers': {
      text: 'a\n<!-- generated:x -->\nold\n<!-- /generated:x -->\nb\n',
      want: 'a\n<!-- generated:x -->\nnew\n<!-- /generated:x -->\nb\n',
    },
    'fills an empty block': {
      text: '<!-- generated:x -->\n<!-- /generated:x -->\n',
      want: '<!-- generated:x -->\nnew\n<!-- /generated:x -->\n',
    },
    'refuses a block without its closing marker': { text: '<!-- generated:x -->\nold\n', want: /no closing/ },
    'refuses a block no generator fills': { text: '<!-- generated:y -->\n<!-- /generated:y -->\n', want: /no generator for the block y/ },
  };
  for (const [name, tc] of Object.entries(cases)) {
    it(name, () => {
      if (typeof tc.want === 'string') expect(fillBlocks(tc.text, { x: 'new\n' }, 'doc.md')).to.equal(tc.want);
      else expect(() => fillBlocks(tc.text, { x: 'new' }, 'doc.md')).to.throw(tc.want);
    });
  }

  it('keeps a table cell on one line and its pipes escaped', () => {
    expect(table(['a', 'b'], [['x|y', 'one\n  two']])).to.equal('| a | b |\n| --- | --- |\n| x\\|y | one two |');
  });
});
