/** The README's walkthrough blocks are found as the end-to-end test finds them. */
import { expect } from 'chai';
import { readFileSync } from 'node:fs';
import { join } from 'node:path';
import { REPO_ROOT } from '../../../scripts/docs';
import { walkthroughBlocks } from '../../../scripts/docs/walkthrough';

describe('walkthrough blocks', () => {
  it('reads the README walk from a Ready bucket to its deletion', () => {
    const blocks = walkthroughBlocks(readFileSync(join(REPO_ROOT, 'README.md'), 'utf8'));
    expect(blocks.length).to.be.greaterThan(2);
    expect(blocks[0]?.script).to.include('kubectl wait --for=condition=Ready');
    expect(blocks.at(-1)?.script).to.include('kubectl delete');
  });

  const cases: Record<string, { text: string; want: { line: number; script: string }[] | RegExp }> = {
    'takes only marked blocks': {
      text: '```sh\nignored\n```\n<!-- walkthrough -->\n```sh\necho a\necho b\n```\n',
      want: [{ line: 5, script: 'echo a\necho b' }],
    },
    'refuses a marker before another kind of block': { text: '<!-- walkthrough -->\n```yaml\na: 1\n```\n', want: /not followed by/ },
    'refuses a block that never closes': { text: '<!-- walkthrough -->\n```sh\necho a\n', want: /never closed/ },
  };
  for (const [name, tc] of Object.entries(cases)) {
    it(name, () => {
      if (tc.want instanceof RegExp) expect(() => walkthroughBlocks(tc.text)).to.throw(tc.want);
      else expect(walkthroughBlocks(tc.text)).to.deep.equal(tc.want);
    });
  }
});
