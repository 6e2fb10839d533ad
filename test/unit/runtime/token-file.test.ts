import { expect } from 'chai';
import { mkdirSync, renameSync, rmSync, symlinkSync, utimesSync } from 'node:fs';
import { join } from 'node:path';
import { TokenFileSource } from '../../../operator/runtime/token-file';
import { scratch, type Scratch } from './rest-config-fixtures';

describe('TokenFileSource', () => {
  let s: Scratch;
  beforeEach(() => {
    s = scratch();
  });
  afterEach(() => s.cleanup());

  it('serves the trimmed token and the new one right after a rewrite', async () => {
    const path = s.file('token', 'first\n');
    const src = new TokenFileSource(path);
    expect(await src.get()).to.deep.equal({ token: 'first' });
    s.file('token', 'second');
    expect(await src.get()).to.deep.equal({ token: 'second' });
  });

  it("follows the kubelet's atomic symlink swap of a projected token", async () => {
    // The kubelet's layout: token -> ..data/token, ..data -> ..<timestamp>; rotation swaps ..data.
    mkdirSync(join(s.dir, '..v1'));
    s.file('..v1/token', 'old');
    symlinkSync('..v1', join(s.dir, '..data'));
    symlinkSync('..data/token', join(s.dir, 'token'));
    const src = new TokenFileSource(join(s.dir, 'token'));
    expect(await src.get()).to.deep.equal({ token: 'old' });
    mkdirSync(join(s.dir, '..v2'));
    s.file('..v2/token', 'new');
    symlinkSync('..v2', join(s.dir, '..data_tmp'));
    renameSync(join(s.dir, '..data_tmp'), join(s.dir, '..data'));
    rmSync(join(s.dir, '..v1'), { recursive: true });
    expect(await src.get()).to.deep.equal({ token: 'new' });
  });

  it('re-reads after maxAgeMs even when the file looks unchanged', async () => {
    let now = 0;
    const path = s.file('token', 'a');
    // Same inode, size and mtime before and after the rewrite, as on a filesystem with coarse
    // timestamps: only the age can tell.
    utimesSync(path, 1000, 1000);
    const src = new TokenFileSource(path, { maxAgeMs: 1000, now: () => now });
    expect(await src.get()).to.deep.equal({ token: 'a' });
    s.file('token', 'b');
    utimesSync(path, 1000, 1000);
    now = 999;
    expect(await src.get(), 'looks unchanged and is younger than maxAgeMs').to.deep.equal({ token: 'a' });
    now = 1000;
    expect(await src.get()).to.deep.equal({ token: 'b' });
  });

  it('keeps the last good token when the file disappears or empties', async () => {
    const path = s.file('token', 'good');
    const src = new TokenFileSource(path);
    expect(await src.get()).to.deep.equal({ token: 'good' });
    s.file('token', '');
    expect(await src.get()).to.deep.equal({ token: 'good' });
    rmSync(path);
    expect(await src.get()).to.deep.equal({ token: 'good' });
  });

  const failures: Record<string, { content?: string; want: RegExp }> = {
    'a missing file': { want: /^cannot read token file .*\/token: ENOENT$/ },
    'an empty file': { content: ' \n', want: /^cannot read token file .*\/token: file is empty$/ },
  };
  for (const [name, tc] of Object.entries(failures)) {
    it(`fails with a one-line error on ${name} when no token was read yet`, async () => {
      const path = tc.content === undefined ? join(s.dir, 'token') : s.file('token', tc.content);
      const err = await new TokenFileSource(path).get().then(
        () => undefined,
        (e: unknown) => e,
      );
      expect(err).to.be.instanceOf(Error);
      expect((err as Error).message).to.match(tc.want);
    });
  }
});
